/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sanitized.h - TU_SANITIZED: 1 in a build under AddressSanitizer (CI's sanitizer stage, which
 * checks memory, not coverage), where the tests sample their heaviest sweeps; 0 otherwise, where
 * they run them whole. The planner's tests and the runtime's both include it.
 */
#ifndef BK_SANITIZED_H
#define BK_SANITIZED_H

#ifdef __SANITIZE_ADDRESS__
#define TU_SANITIZED 1
#else
#define TU_SANITIZED 0
#endif

#endif
