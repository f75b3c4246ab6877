/* SPDX-License-Identifier: MIT */
/* The test points' hook (testpoint.h); nothing without HROUTE_TESTPOINTS. */
#include "util/testpoint.h"

#ifdef HROUTE_TESTPOINTS
_Atomic(hr__tp_fn) hr__tp_hook;
#else
typedef int hr__testpoint_unit_is_not_empty; /* ISO C wants one declaration */
#endif
