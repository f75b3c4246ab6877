/* SPDX-License-Identifier: MIT */
/*
 * A program that uses an installed hroute the way a user's program would:
 * tests/install/run.sh builds it against the installed headers and
 * libraries (through the CMake package and through pkg-config) and checks
 * that it prints "hroute <version> HR_ENOMEM".
 */
#include <hroute.h>

#include <stdio.h>

int main(void) {
  printf("hroute %s %s\n", hr_version_string(), hr_err_name(HR_ENOMEM));
  return 0;
}
