/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "blas.h"

/* OpenBLAS's cblas.h also declares its own calls */
#include <cblas.h>

void
avf_blas_set_threads (int n)
{
  openblas_set_num_threads (n >= 1 ? n : 1);
}

const char *
avf_blas_kernel (void)
{
  const char *name = openblas_get_corename ();
  return name ? name : "unknown";
}
