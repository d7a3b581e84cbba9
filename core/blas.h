/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * blas: the BLAS library under the core kernels (OpenBLAS, through CBLAS),
 * the few calls that are not CBLAS.
 */
#ifndef AVF_BLAS_H
#define AVF_BLAS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Threads one BLAS call may use, process-wide (every OpenBLAS user in the
 * process); n >= 1.  With 1 the results are the same bytes on every
 * machine; OpenBLAS splits products differently with more. */
void avf_blas_set_threads (int n);

/* The name of the BLAS kernel in use (OpenBLAS's core name, such as
 * "Haswell"), for reports. */
const char *avf_blas_kernel (void);

#ifdef __cplusplus
}
#endif
#endif /* AVF_BLAS_H */
