#include "svg_lines.h"

#include <gtest/gtest.h>

int main_placeholder;
