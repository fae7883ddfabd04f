#pragma once
// FUSIONCHECK_VECTOR_CLONES before a function with a hot, vectorisable loop: GCC builds an
// x86-64-v4 (AVX-512) and an x86-64-v3 (AVX2) copy besides the baseline one and picks one
// when the program loads (an ifunc), so the loop uses the machine's vector width while the
// build stays portable. The copies compute the same values: the loops they are put on use
// no floating-point operation whose result depends on the vector width (no reassociation,
// no FMA contraction: the reference builds with -ffp-contract=off).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define FUSIONCHECK_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FUSIONCHECK_VECTOR_CLONES
#endif
