/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * NumPy file writer: .npy arrays and .npz archives (ZIP, stored), written
 * from a stream in bounded memory.
 *
 * A GstAvNpyArray collects the frames of one array in an unlinked
 * temporary file while the stream runs, each frame it is given stored
 * once: a frame repeated (one per frame of a buffer) and frames filled
 * with one value (NaN maps) take no more room than one frame and nothing.
 * gst_av_npy_save() and gst_av_npz_save() then write the final file, every
 * frame spelled out, with the frame count in the headers.  Final files are
 * written to a new hidden file beside <path> (".<name>-XXXXXX.tmp") and
 * renamed over <path> when complete; on any failure it is removed, so
 * <path> is never half-written (what was there stays).
 *
 * Formats: NumPy "format version 1.0" (numpy/lib/format.py) and the ZIP
 * application note (PKWARE APPNOTE.TXT 6.3), stored or deflated members
 * (numpy.savez / numpy.savez_compressed), ZIP64 extra fields and end
 * records when a size or offset does not fit 32 bits.
 * Errors are GErrors in the G_FILE_ERROR domain whose message names the
 * file and the system's reason; a full disk, a file size limit (EFBIG) or
 * a quota is G_FILE_ERROR_NOSPC.
 */
#ifndef __GST_AV_NPY_H__
#define __GST_AV_NPY_H__

#include <glib.h>

G_BEGIN_DECLS

/* Dimensions of one frame; the array adds the frame axis in front. */
#define GST_AV_NPY_MAX_FRAME_DIMS 4

typedef enum {
  GST_AV_NPY_FLOAT32,           /* '<f4' on little-endian hosts */
  GST_AV_NPY_INT64,             /* '<i8' */
  GST_AV_NPY_BOOL,              /* '|b1': one byte, 0 or 1 */
  GST_AV_NPY_INT32,             /* '<i4' */
  GST_AV_NPY_FLOAT16,           /* '<f2': IEEE 754 binary16, see
                                 * gst_av_npy_float_to_half() */
  GST_AV_NPY_BYTES              /* '|S<n>': a byte string of n bytes, n the
                                 * frame's byte size (set with
                                 * gst_av_npy_array_set_bytes_length()) */
} GstAvNpyDtype;

typedef enum {
  GST_AV_NPZ_FLAGS_NONE = 0,
  /* ZIP64 records for every member even when sizes fit 32 bits: lets the
   * tests check the ZIP64 layout without writing 4 GiB. */
  GST_AV_NPZ_FORCE_ZIP64 = 1 << 0,
  /* Members deflated (ZIP method 8), as numpy.savez_compressed writes
   * them; numpy.load reads both. */
  GST_AV_NPZ_DEFLATE = 1 << 1
} GstAvNpzFlags;

typedef struct _GstAvNpyArray GstAvNpyArray;

/* A new, empty array called @name (the .npz member is "<name>.npy") whose
 * frames go to an unlinked temporary file in @tmp_dir. */
GstAvNpyArray *gst_av_npy_array_new (const gchar * name, GstAvNpyDtype dtype,
    const gchar * tmp_dir, GError ** error);

/* Sets the shape of one frame (@ndim 0 makes each frame a scalar); only
 * while the array holds no frame.  Fails when the byte size overflows. */
gboolean gst_av_npy_array_set_frame_shape (GstAvNpyArray * array,
    guint ndim, const guint64 * shape, GError ** error);

/* A GST_AV_NPY_BYTES array: each element is a string of @length bytes
 * (1 or more), padded with NUL bytes.  Only while the array holds no
 * frame. */
gboolean gst_av_npy_array_set_bytes_length (GstAvNpyArray * array,
    gsize length, GError ** error);

/* @single TRUE: the array holds exactly one frame and is written without
 * the frame axis (its shape is the frame shape: an attribute of the file,
 * such as the patch grid, rather than one value per frame). */
void gst_av_npy_array_set_single (GstAvNpyArray * array, gboolean single);

/* Appends @n_frames frames of gst_av_npy_array_get_frame_bytes() bytes
 * each, in host byte order. */
gboolean gst_av_npy_array_append (GstAvNpyArray * array, gconstpointer data,
    guint64 n_frames, GError ** error);

/* Appends @n_frames copies of one @frame, stored once. */
gboolean gst_av_npy_array_append_repeat (GstAvNpyArray * array,
    gconstpointer frame, guint64 n_frames, GError ** error);

/* Appends @n_frames frames whose every element is @element (one element of
 * the array's dtype: a NaN, a True), stored as nothing but a count. */
gboolean gst_av_npy_array_append_fill (GstAvNpyArray * array,
    gconstpointer element, guint64 n_frames, GError ** error);

const gchar *gst_av_npy_array_get_name (const GstAvNpyArray * array);
guint64 gst_av_npy_array_get_n_frames (const GstAvNpyArray * array);
gsize gst_av_npy_array_get_frame_bytes (const GstAvNpyArray * array);
/* Bytes in the temporary file so far (the final file spells out more). */
guint64 gst_av_npy_array_get_stored_bytes (const GstAvNpyArray * array);

void gst_av_npy_array_free (GstAvNpyArray * array);

/* Writes @array as a .npy file at @path. */
gboolean gst_av_npy_save (const gchar * path, GstAvNpyArray * array,
    GError ** error);

/* Writes the arrays, in order, as the members of a .npz archive at @path. */
gboolean gst_av_npz_save (const gchar * path, GstAvNpyArray * const *arrays,
    guint n_arrays, GstAvNpzFlags flags, GError ** error);

/* IEEE 754 binary16 of @n floats, rounded to nearest even; NaN stays NaN
 * (its sign kept), values beyond 65504 become infinities.
 * ref: numpy.float32(x).astype(numpy.float16) */
void gst_av_npy_float_to_half (guint16 * out, const gfloat * in, gsize n);

/* Flushes @dir (where a file was just renamed) to disk, so that the new
 * name survives a power cut.  Errors are ignored: some file systems do not
 * sync folders. */
void gst_av_npy_sync_dir (const gchar * dir);

/* The .npy header (magic, version, length, dictionary padded with spaces
 * and a newline to a multiple of 64 bytes) for an array of @ndim
 * dimensions.  Returns its length, 0 when @out_size is too small. */
gsize gst_av_npy_header (gchar * out, gsize out_size, GstAvNpyDtype dtype,
    guint ndim, const guint64 * shape);

G_END_DECLS

#endif /* __GST_AV_NPY_H__ */
