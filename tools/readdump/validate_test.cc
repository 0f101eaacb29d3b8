#include "validate.h"
#include <gtest/gtest.h>
