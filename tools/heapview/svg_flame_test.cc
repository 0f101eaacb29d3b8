#include "svg_flame.h"

#include <gtest/gtest.h>

int main_placeholder;
