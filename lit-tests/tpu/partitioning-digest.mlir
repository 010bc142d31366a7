// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{ignore-custom-partitioning=true})' %data/corpus/cpu/custom_partitioning.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{ignore-custom-partitioning=true})' %data/corpus/cpu/custom_partitioning.a_otherpointer.generic.mlir > %t.b
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/custom_partitioning.a.generic.mlir > %t.c
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/custom_partitioning.a_otherpointer.generic.mlir > %t.d
// RUN: cat %t.a %t.b | FileCheck %s --check-prefix=IGNORED
// RUN: cat %t.c %t.d | FileCheck %s --check-prefix=DEFAULT

// Two process addresses: one digest with the option, two without.

// IGNORED: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// IGNORED: cache_key.digest = "[[DIGEST]]"

// DEFAULT: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// DEFAULT: cache_key.digest = "{{[0-9a-f]+}}"
// DEFAULT-NOT: [[DIGEST]]
