#include "svg_bars.h"

#include <gtest/gtest.h>

int main_placeholder;
