/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * NumPy .npy / .npz writer (see npy.h).  Plain C on GLib.
 *
 * .npy: numpy/lib/format.py, version 1.0: "\x93NUMPY", 1, 0, a little-endian
 * uint16 header length, then a Python dict literal padded with spaces and
 * a newline so that the data starts on a 64-byte boundary.
 *
 * .npz: a ZIP archive of .npy members (numpy.savez), stored, or deflated
 * as numpy.savez_compressed does (method 8, raw deflate, zlib level 6).  Layout per PKWARE APPNOTE.TXT 6.3: local file header
 * (4.3.7), data, ..., central directory headers (4.3.12), and the end of
 * central directory record (4.3.16), preceded by the ZIP64 end record
 * (4.3.14) and locator (4.3.15) when counts, sizes or offsets overflow.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* O_TMPFILE */
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <zlib.h>

/* The frames of an array are a list of runs, each stored once: frames as
 * they came (in the temporary file), one frame repeated (stored once in
 * it), or one element repeated (not stored at all).  The final file
 * spells them out. */
typedef enum
{
  RUN_FRAMES,
  RUN_REPEAT,
  RUN_FILL
} RunKind;

typedef struct
{
  RunKind kind;
  guint64 n_frames;
  guint64 offset;               /* FRAMES, REPEAT: of the first byte in the
                                 * temporary file */
  guint8 element[8];            /* FILL: one element */
} Run;

/* Beyond this many runs every append is stored as frames: the list (in
 * memory) stays at 128 KiB per array, the temporary file grows. */
#define MAX_RUNS 4096

struct _GstAvNpyArray
{
  gchar *name;
  GstAvNpyDtype dtype;
  gsize itemsize;               /* bytes of one element */
  gboolean single;              /* one frame, written without its axis */
  guint ndim;                   /* of one frame */
  guint64 shape[GST_AV_NPY_MAX_FRAME_DIMS];
  gsize frame_bytes;
  guint64 n_frames;
  GArray *runs;                 /* Run */
  guint64 stored;               /* bytes in the temporary file */
  FILE *fp;                     /* the stored frames, host byte order */
  gchar *tmp_path;              /* for messages */
  gboolean tmp_linked;          /* unlink at free */
};

/* ---- errors ------------------------------------------------------------ */

/* G_FILE_ERROR_NOSPC also for a file size limit (EFBIG: RLIMIT_FSIZE, the
 * file system's largest file) and a disk quota (EDQUOT). */
static gint
file_error_code (int err)
{
  switch (err) {
    case ENOSPC:
    case EFBIG:
#ifdef EDQUOT
    case EDQUOT:
#endif
      return G_FILE_ERROR_NOSPC;
    default:
      return g_file_error_from_errno (err);
  }
}

static void
set_errno_error (GError ** error, int err, const gchar * what,
    const gchar * path)
{
  g_set_error (error, G_FILE_ERROR, file_error_code (err),
      "%s \"%s\": %s", what, path, g_strerror (err));
}

/* ---- arrays ------------------------------------------------------------ */

static gsize
dtype_size (GstAvNpyDtype dtype)
{
  switch (dtype) {
    case GST_AV_NPY_FLOAT32:
      return 4;
    case GST_AV_NPY_INT64:
      return 8;
    case GST_AV_NPY_INT32:
      return 4;
    case GST_AV_NPY_FLOAT16:
      return 2;
    default:
      return 1;
  }
}

/* The numpy descr of @dtype in host byte order; @itemsize for '|S<n>'. */
static void
dtype_descr (gchar * out, gsize out_size, GstAvNpyDtype dtype, gsize itemsize)
{
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
  static const gchar *const descr[] = { "<f4", "<i8", "|b1", "<i4", "<f2" };
#else
  static const gchar *const descr[] = { ">f4", ">i8", "|b1", ">i4", ">f2" };
#endif
  if (dtype == GST_AV_NPY_BYTES)
    g_snprintf (out, out_size, "|S%" G_GSIZE_FORMAT, itemsize);
  else
    g_strlcpy (out, descr[dtype], out_size);
}

/* A file in @dir that has no name from the start (O_TMPFILE), so that no
 * moment exists at which a killed process leaves it behind; -1 where the
 * system or the file system cannot (then a named one is made and unlinked
 * at once). */
static int
open_unnamed (const gchar * dir)
{
#ifdef O_TMPFILE
  return open (dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#else
  return -1;
#endif
}

GstAvNpyArray *
gst_av_npy_array_new (const gchar * name, GstAvNpyDtype dtype,
    const gchar * tmp_dir, GError ** error)
{
  GstAvNpyArray *a;
  gchar *base;
  int fd, err;

  g_return_val_if_fail (name != NULL && tmp_dir != NULL, NULL);
  g_return_val_if_fail (dtype <= GST_AV_NPY_BYTES, NULL);

  a = g_new0 (GstAvNpyArray, 1);
  a->name = g_strdup (name);
  a->dtype = dtype;
  a->itemsize = dtype_size (dtype);
  a->frame_bytes = a->itemsize;
  base = g_strdup_printf (".avtensorsink-%s-XXXXXX", name);
  a->tmp_path = g_build_filename (tmp_dir, base, NULL);
  g_free (base);

  fd = open_unnamed (tmp_dir);
  if (fd >= 0) {
    a->fp = fdopen (fd, "w+b");
    if (a->fp == NULL) {
      err = errno;
      close (fd);
      set_errno_error (error, err, "Could not open the temporary file",
          a->tmp_path);
      goto fail;
    }
    a->runs = g_array_new (FALSE, FALSE, sizeof (Run));
    return a;
  }
  fd = g_mkstemp (a->tmp_path);
  if (fd < 0) {
    err = errno;
    g_set_error (error, G_FILE_ERROR, file_error_code (err),
        "Could not create a temporary file in \"%s\": %s", tmp_dir,
        g_strerror (err));
    goto fail;
  }
  a->fp = fdopen (fd, "w+b");
  if (a->fp == NULL) {
    err = errno;
    close (fd);
    g_unlink (a->tmp_path);
    set_errno_error (error, err, "Could not open the temporary file",
        a->tmp_path);
    goto fail;
  }
  /* The open stream keeps the data; nothing stays behind on a crash. */
  a->tmp_linked = g_unlink (a->tmp_path) != 0;
  a->runs = g_array_new (FALSE, FALSE, sizeof (Run));
  return a;

fail:
  g_free (a->tmp_path);
  g_free (a->name);
  g_free (a);
  return NULL;
}

gboolean
gst_av_npy_array_set_frame_shape (GstAvNpyArray * array, guint ndim,
    const guint64 * shape, GError ** error)
{
  guint64 bytes;

  g_return_val_if_fail (array != NULL, FALSE);
  g_return_val_if_fail (ndim <= GST_AV_NPY_MAX_FRAME_DIMS, FALSE);
  g_return_val_if_fail (array->n_frames == 0, FALSE);

  bytes = array->itemsize;
  for (guint d = 0; d < ndim; d++) {
    if (!g_uint64_checked_mul (&bytes, bytes, shape[d]) || bytes > G_MAXSIZE
        || bytes > G_MAXINT64) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
          "A frame of array \"%s\" would be larger than this system can "
          "address", array->name);
      return FALSE;
    }
  }
  array->ndim = ndim;
  for (guint d = 0; d < ndim; d++)
    array->shape[d] = shape[d];
  array->frame_bytes = bytes;
  return TRUE;
}

gboolean
gst_av_npy_array_set_bytes_length (GstAvNpyArray * array, gsize length,
    GError ** error)
{
  g_return_val_if_fail (array != NULL, FALSE);
  g_return_val_if_fail (array->dtype == GST_AV_NPY_BYTES, FALSE);
  g_return_val_if_fail (length > 0, FALSE);

  array->itemsize = length;
  return gst_av_npy_array_set_frame_shape (array, array->ndim, array->shape,
      error);
}

void
gst_av_npy_array_set_single (GstAvNpyArray * array, gboolean single)
{
  g_return_if_fail (array != NULL);
  array->single = single;
}

/* FALSE (and an error) when @n_frames more frames would make the array
 * larger than a file can be. */
static gboolean
check_growth (GstAvNpyArray * array, guint64 n_frames, GError ** error)
{
  guint64 total;

  if (!g_uint64_checked_add (&total, array->n_frames, n_frames)
      || !g_uint64_checked_mul (&total, total, array->frame_bytes)
      || total > G_MAXINT64) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC,
        "Array \"%s\" would grow past the largest file size", array->name);
    return FALSE;
  }
  return TRUE;
}

/* Writes @bytes to the end of the temporary file. */
static gboolean
store (GstAvNpyArray * array, gconstpointer data, gsize bytes,
    GError ** error)
{
  if (bytes > 0 && fwrite (data, 1, bytes, array->fp) != bytes) {
    set_errno_error (error, errno ? errno : EIO,
        "Could not write the temporary file", array->tmp_path);
    return FALSE;
  }
  array->stored += bytes;
  return TRUE;
}

static Run *
last_run (GstAvNpyArray * array)
{
  if (array->runs->len == 0)
    return NULL;
  return &g_array_index (array->runs, Run, array->runs->len - 1);
}

static void
add_run (GstAvNpyArray * array, const Run * run)
{
  g_array_append_vals (array->runs, run, 1);
  array->n_frames += run->n_frames;
}

/* Frames as they come: the last run grows when it is frames too (it then
 * ends where the temporary file ends). */
static gboolean
append_frames (GstAvNpyArray * array, gconstpointer data, guint64 n_frames,
    GError ** error)
{
  const guint64 offset = array->stored;
  guint64 bytes;
  Run *last = last_run (array);

  if (!g_uint64_checked_mul (&bytes, n_frames, array->frame_bytes)
      || bytes > G_MAXSIZE) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC,
        "Array \"%s\" would grow past the largest file size", array->name);
    return FALSE;
  }
  if (!store (array, data, (gsize) bytes, error))
    return FALSE;
  if (last != NULL && last->kind == RUN_FRAMES) {
    last->n_frames += n_frames;
    array->n_frames += n_frames;
  } else {
    Run run = { RUN_FRAMES, n_frames, offset, {0} };
    add_run (array, &run);
  }
  return TRUE;
}

gboolean
gst_av_npy_array_append (GstAvNpyArray * array, gconstpointer data,
    guint64 n_frames, GError ** error)
{
  g_return_val_if_fail (array != NULL && array->fp != NULL, FALSE);

  if (!check_growth (array, n_frames, error))
    return FALSE;
  if (n_frames == 0)
    return TRUE;
  return append_frames (array, data, n_frames, error);
}

gboolean
gst_av_npy_array_append_repeat (GstAvNpyArray * array, gconstpointer frame,
    guint64 n_frames, GError ** error)
{
  Run run = { RUN_REPEAT, n_frames, 0, {0} };

  g_return_val_if_fail (array != NULL && array->fp != NULL, FALSE);

  if (!check_growth (array, n_frames, error))
    return FALSE;
  if (n_frames == 0)
    return TRUE;
  if (n_frames == 1 || array->runs->len >= MAX_RUNS) {
    for (guint64 f = 0; f < n_frames; f++)
      if (!append_frames (array, frame, 1, error))
        return FALSE;
    return TRUE;
  }
  run.offset = array->stored;
  if (!store (array, frame, array->frame_bytes, error))
    return FALSE;
  add_run (array, &run);
  return TRUE;
}

gboolean
gst_av_npy_array_append_fill (GstAvNpyArray * array, gconstpointer element,
    guint64 n_frames, GError ** error)
{
  const gsize size = dtype_size (array->dtype);
  Run run = { RUN_FILL, n_frames, 0, {0} };
  Run *last;

  g_return_val_if_fail (array != NULL && array->fp != NULL, FALSE);
  g_return_val_if_fail (element != NULL, FALSE);

  if (!check_growth (array, n_frames, error))
    return FALSE;
  if (n_frames == 0)
    return TRUE;
  memcpy (run.element, element, size);
  last = last_run (array);
  if (last != NULL && last->kind == RUN_FILL
      && memcmp (last->element, run.element, size) == 0) {
    last->n_frames += n_frames;
    array->n_frames += n_frames;
    return TRUE;
  }
  if (array->runs->len >= MAX_RUNS) {
    /* spelled out in the temporary file, a frame at a time */
    guint8 *f = g_malloc (MAX (array->frame_bytes, 1));
    gboolean ok = TRUE;

    for (gsize i = 0; i < array->frame_bytes; i += size)
      memcpy (f + i, element, size);
    for (guint64 k = 0; k < n_frames && ok; k++)
      ok = append_frames (array, f, 1, error);
    g_free (f);
    return ok;
  }
  add_run (array, &run);
  return TRUE;
}

guint64
gst_av_npy_array_get_stored_bytes (const GstAvNpyArray * array)
{
  return array->stored;
}

const gchar *
gst_av_npy_array_get_name (const GstAvNpyArray * array)
{
  return array->name;
}

guint64
gst_av_npy_array_get_n_frames (const GstAvNpyArray * array)
{
  return array->n_frames;
}

gsize
gst_av_npy_array_get_frame_bytes (const GstAvNpyArray * array)
{
  return array->frame_bytes;
}

void
gst_av_npy_array_free (GstAvNpyArray * array)
{
  if (array == NULL)
    return;
  if (array->fp)
    fclose (array->fp);
  if (array->tmp_linked)
    g_unlink (array->tmp_path);
  if (array->runs)
    g_array_free (array->runs, TRUE);
  g_free (array->tmp_path);
  g_free (array->name);
  g_free (array);
}

/* ---- .npy header ------------------------------------------------------- */

#define NPY_MAGIC_LEN 6
#define NPY_PREFIX_LEN 10       /* magic, version (2), header length (2) */
#define NPY_ALIGN 64

static gsize
header_with_descr (gchar * out, gsize out_size, const gchar * descr,
    guint ndim, const guint64 * shape)
{
  GString *dict = g_string_new (NULL);
  gsize total, pad, hlen;

  g_string_append_printf (dict, "{'descr': '%s', 'fortran_order': False, "
      "'shape': (", descr);
  for (guint d = 0; d < ndim; d++)
    g_string_append_printf (dict, "%s%" G_GUINT64_FORMAT, d ? ", " : "",
        shape[d]);
  if (ndim == 1)
    g_string_append_c (dict, ',');
  g_string_append (dict, "), }");

  /* dict, spaces, '\n': the data starts at a multiple of NPY_ALIGN */
  total = NPY_PREFIX_LEN + dict->len + 1;
  pad = (NPY_ALIGN - total % NPY_ALIGN) % NPY_ALIGN;
  hlen = dict->len + pad + 1;
  if (hlen > G_MAXUINT16 || NPY_PREFIX_LEN + hlen > out_size) {
    g_string_free (dict, TRUE);
    return 0;
  }
  memcpy (out, "\x93NUMPY", NPY_MAGIC_LEN);
  out[6] = 1;                   /* format version 1.0 */
  out[7] = 0;
  out[8] = (gchar) (hlen & 0xFF);
  out[9] = (gchar) (hlen >> 8);
  memcpy (out + NPY_PREFIX_LEN, dict->str, dict->len);
  memset (out + NPY_PREFIX_LEN + dict->len, ' ', pad);
  out[NPY_PREFIX_LEN + hlen - 1] = '\n';
  g_string_free (dict, TRUE);
  return NPY_PREFIX_LEN + hlen;
}

gsize
gst_av_npy_header (gchar * out, gsize out_size, GstAvNpyDtype dtype,
    guint ndim, const guint64 * shape)
{
  gchar descr[32];

  g_return_val_if_fail (dtype != GST_AV_NPY_BYTES, 0);
  dtype_descr (descr, sizeof descr, dtype, 0);
  return header_with_descr (out, out_size, descr, ndim, shape);
}

/* The header of the whole array: frames axis, then the frame shape (only
 * the frame shape for a single array). */
static gsize
array_header (const GstAvNpyArray * a, gchar * out, gsize out_size)
{
  guint64 shape[GST_AV_NPY_MAX_FRAME_DIMS + 1];
  const guint lead = a->single ? 0 : 1;
  gchar descr[32];

  if (a->single && a->n_frames != 1)
    return 0;
  shape[0] = a->n_frames;
  for (guint d = 0; d < a->ndim; d++)
    shape[d + lead] = a->shape[d];
  dtype_descr (descr, sizeof descr, a->dtype, a->itemsize);
  return header_with_descr (out, out_size, descr, a->ndim + lead, shape);
}

/* ---- float16 ----------------------------------------------------------- */

void
gst_av_npy_float_to_half (guint16 * out, const gfloat * in, gsize n)
{
  for (gsize i = 0; i < n; i++) {
    guint32 x, sign, mag;
    guint16 h;

    memcpy (&x, &in[i], 4);
    sign = (x >> 16) & 0x8000u;
    mag = x & 0x7FFFFFFFu;
    if (mag > 0x7F800000u) {
      /* NaN: a quiet NaN, the top payload bits kept */
      h = (guint16) (0x7E00u | ((mag >> 13) & 0x1FFu));
    } else if (mag >= 0x477FF000u) {
      /* 65520 and above round to infinity (and infinity stays) */
      h = 0x7C00u;
    } else if (mag >= 0x38800000u) {
      /* normal: rebias the exponent, round the mantissa to nearest even */
      guint32 r = mag - 0x38000000u;
      r += 0x0FFFu + ((r >> 13) & 1u);
      h = (guint16) (r >> 13);
    } else if (mag >= 0x33000000u) {
      /* subnormal half: shift the mantissa with its hidden bit */
      const guint32 e = mag >> 23, m = (mag & 0x7FFFFFu) | 0x800000u;
      const guint shift = 126 - e;      /* 14 .. 24 */
      guint32 r = m >> shift;
      const guint32 rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
      if (rest > half || (rest == half && (r & 1u)))
        r++;
      h = (guint16) r;
    } else {
      h = 0;
    }
    out[i] = (guint16) (sign | h);
  }
}

void
gst_av_npy_sync_dir (const gchar * dir)
{
  int fd = open (dir, O_RDONLY | O_DIRECTORY);

  if (fd >= 0) {
    (void) fsync (fd);
    close (fd);
  }
}

/* ---- output file ------------------------------------------------------- */

#define COPY_CHUNK (256 * 1024)
#define HEADER_MAX 512

typedef struct
{
  const gchar *path;            /* the destination, for messages */
  gchar *tmp_path;              /* ".<name>-XXXXXX.tmp" beside it */
  FILE *fp;
  guint64 offset;               /* bytes written so far */
  guint8 *chunk;                /* COPY_CHUNK bytes */
  gboolean deflating;           /* member data goes through zs */
  z_stream zs;                  /* raw deflate, set up once */
  gboolean zs_ready;
  guint8 *zbuf;                 /* COPY_CHUNK bytes of deflated data */
} Output;

static gboolean
output_open (Output * o, const gchar * path, GError ** error)
{
  gchar *dir = g_path_get_dirname (path), *base = g_path_get_basename (path);
  gchar *name = g_strdup_printf (".%s-XXXXXX.tmp", base);
  int fd, err;

  memset (o, 0, sizeof *o);
  o->path = path;
  o->tmp_path = g_build_filename (dir, name, NULL);
  g_free (name);
  g_free (base);
  g_free (dir);
  /* a new name of our own (never another file's), created with the mode
   * that a plain open would give */
  fd = g_mkstemp_full (o->tmp_path, O_RDWR, 0666);
  if (fd < 0 || (o->fp = fdopen (fd, "wb")) == NULL) {
    err = errno;
    set_errno_error (error, err, "Could not create a file beside", path);
    if (fd >= 0) {
      close (fd);
      g_unlink (o->tmp_path);
    }
    g_free (o->tmp_path);
    return FALSE;
  }
  o->chunk = g_malloc (COPY_CHUNK);
  return TRUE;
}

static gboolean
output_write (Output * o, gconstpointer data, gsize len, GError ** error)
{
  if (len > 0 && fwrite (data, 1, len, o->fp) != len) {
    set_errno_error (error, errno ? errno : EIO, "Could not write",
        o->tmp_path);
    return FALSE;
  }
  o->offset += len;
  return TRUE;
}

/* Reads @len bytes at @offset of the temporary file of @a into @buf. */
static gboolean
read_stored (GstAvNpyArray * a, guint64 offset, guint8 * buf, gsize len,
    GError ** error)
{
  if (offset > G_MAXINT64 || fseeko (a->fp, (off_t) offset, SEEK_SET) != 0) {
    set_errno_error (error, errno ? errno : EOVERFLOW,
        "Could not read back the temporary file", a->tmp_path);
    return FALSE;
  }
  if (fread (buf, 1, len, a->fp) != len) {
    if (ferror (a->fp))
      set_errno_error (error, errno ? errno : EIO,
          "Could not read back the temporary file", a->tmp_path);
    else
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO,
          "The temporary file \"%s\" of array \"%s\" is shorter than "
          "the frames written to it", a->tmp_path, a->name);
    return FALSE;
  }
  return TRUE;
}

/* Runs the deflate stream with @flush, writing what it gives. */
static gboolean
output_deflate (Output * o, int flush, GError ** error)
{
  int ret;

  do {
    o->zs.next_out = o->zbuf;
    o->zs.avail_out = COPY_CHUNK;
    ret = deflate (&o->zs, flush);
    if (ret == Z_STREAM_ERROR) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
          "Could not compress the data of \"%s\"", o->path);
      return FALSE;
    }
    if (!output_write (o, o->zbuf, COPY_CHUNK - o->zs.avail_out, error))
      return FALSE;
  } while (o->zs.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
  return TRUE;
}

/* Member data: counted in @crc (when not NULL), then written as it is or
 * through the deflate stream. */
static gboolean
member_write (Output * o, const guint8 * data, gsize len, guint32 * crc,
    GError ** error)
{
  if (crc)
    *crc = (guint32) crc32_z (*crc, data, len);
  if (!o->deflating)
    return output_write (o, data, len, error);
  o->zs.next_in = (Bytef *) data;
  o->zs.avail_in = (uInt) len;  /* len <= COPY_CHUNK */
  return output_deflate (o, Z_NO_FLUSH, error);
}

static gboolean
output_chunk (Output * o, gsize len, guint32 * crc, GError ** error)
{
  return member_write (o, o->chunk, len, crc, error);
}

/* Copies @len bytes at @offset of the temporary file of @a to the output,
 * @times times over. */
static gboolean
output_copy_stored (Output * o, GstAvNpyArray * a, guint64 offset,
    guint64 len, guint64 times, guint32 * crc, GError ** error)
{
  if (len > 0 && len <= COPY_CHUNK) {
    /* read once, then as many copies per write as the chunk holds */
    const guint64 per = COPY_CHUNK / len;

    if (!read_stored (a, offset, o->chunk, (gsize) len, error))
      return FALSE;
    for (guint64 i = 1; i < MIN (per, times); i++)
      memcpy (o->chunk + i * len, o->chunk, (gsize) len);
    while (times > 0) {
      const guint64 n = MIN (per, times);
      if (!output_chunk (o, (gsize) (n * len), crc, error))
        return FALSE;
      times -= n;
    }
    return TRUE;
  }
  for (; times > 0; times--) {
    for (guint64 done = 0; done < len;) {
      const gsize n = (gsize) MIN (len - done, (guint64) COPY_CHUNK);
      if (!read_stored (a, offset + done, o->chunk, n, error)
          || !output_chunk (o, n, crc, error))
        return FALSE;
      done += n;
    }
  }
  return TRUE;
}

/* Writes @len bytes of @element (@size bytes) repeated. */
static gboolean
output_fill (Output * o, const guint8 * element, gsize size, guint64 len,
    guint32 * crc, GError ** error)
{
  /* COPY_CHUNK is a multiple of every element size */
  for (gsize i = 0; i < COPY_CHUNK; i += size)
    memcpy (o->chunk + i, element, size);
  while (len > 0) {
    gsize n = (gsize) MIN (len, (guint64) COPY_CHUNK);
    if (!output_chunk (o, n, crc, error))
      return FALSE;
    len -= n;
  }
  return TRUE;
}

/* Writes the frames of @a, every run spelled out, updating @crc when not
 * NULL. */
static gboolean
output_copy_array (Output * o, GstAvNpyArray * a, guint32 * crc,
    GError ** error)
{
  const guint64 fb = a->frame_bytes;
  gboolean ok = TRUE;

  if (fflush (a->fp) != 0) {
    set_errno_error (error, errno ? errno : EIO,
        "Could not write the temporary file", a->tmp_path);
    return FALSE;
  }
  for (guint r = 0; r < a->runs->len && ok; r++) {
    const Run *run = &g_array_index (a->runs, Run, r);

    switch (run->kind) {
      case RUN_FRAMES:
        /* n_frames * fb was checked at append */
        ok = output_copy_stored (o, a, run->offset, run->n_frames * fb, 1,
            crc, error);
        break;
      case RUN_REPEAT:
        ok = output_copy_stored (o, a, run->offset, fb, run->n_frames, crc,
            error);
        break;
      case RUN_FILL:
        ok = output_fill (o, run->element, dtype_size (a->dtype),
            run->n_frames * fb, crc, error);
        break;
    }
  }
  /* later appends go to the end again */
  if (fseeko (a->fp, 0, SEEK_END) != 0 && ok) {
    set_errno_error (error, errno, "Could not seek in the temporary file",
        a->tmp_path);
    ok = FALSE;
  }
  return ok;
}

static gboolean
output_seek (Output * o, guint64 offset, GError ** error)
{
  if (offset > G_MAXINT64 || fseeko (o->fp, (off_t) offset, SEEK_SET) != 0) {
    set_errno_error (error, errno ? errno : EOVERFLOW, "Could not seek in",
        o->tmp_path);
    return FALSE;
  }
  return TRUE;
}

/* Closes the output; on success renames it over the destination, on
 * failure (@ok FALSE on entry, or a close or rename error) removes it. */
static gboolean
output_finish (Output * o, gboolean ok, GError ** error)
{
  if (ok && (fflush (o->fp) != 0 || fsync (fileno (o->fp)) != 0)) {
    set_errno_error (error, errno, "Could not write", o->tmp_path);
    ok = FALSE;
  }
  if (fclose (o->fp) != 0 && ok) {
    set_errno_error (error, errno, "Could not close", o->tmp_path);
    ok = FALSE;
  }
  o->fp = NULL;
  if (ok && g_rename (o->tmp_path, o->path) != 0) {
    int err = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
        "Could not rename \"%s\" to \"%s\": %s", o->tmp_path, o->path,
        g_strerror (err));
    ok = FALSE;
  }
  if (!ok) {
    g_unlink (o->tmp_path);
  } else {
    gchar *dir = g_path_get_dirname (o->path);
    gst_av_npy_sync_dir (dir);
    g_free (dir);
  }
  g_free (o->tmp_path);
  g_free (o->chunk);
  if (o->zs_ready)
    deflateEnd (&o->zs);
  g_free (o->zbuf);
  return ok;
}

static gboolean
array_header_checked (const GstAvNpyArray * a, gchar * out, gsize * len,
    GError ** error)
{
  *len = array_header (a, out, HEADER_MAX);
  if (*len == 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "The .npy header of array \"%s\" does not fit %d bytes", a->name,
        HEADER_MAX);
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_av_npy_save (const gchar * path, GstAvNpyArray * array, GError ** error)
{
  gchar header[HEADER_MAX];
  gsize hlen;
  Output o;
  gboolean ok;

  g_return_val_if_fail (path != NULL && array != NULL, FALSE);

  if (!array_header_checked (array, header, &hlen, error))
    return FALSE;
  if (!output_open (&o, path, error))
    return FALSE;
  ok = output_write (&o, header, hlen, error)
      && output_copy_array (&o, array, NULL, error);
  return output_finish (&o, ok, error);
}

/* ---- .npz (ZIP) -------------------------------------------------------- */

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP64_END_SIG 0x06064b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u
#define ZIP64_EXTRA_ID 0x0001
#define ZIP_VERSION 20          /* 2.0: stored files, folders */
#define ZIP64_VERSION 45        /* 4.5: ZIP64 */
#define ZIP_DOS_DATE 0x0021     /* 1980-01-01: reproducible archives */
#define ZIP_U16_MAX 0xFFFFu
#define ZIP_U32_MAX 0xFFFFFFFFu
#define ZIP_LOCAL_CRC_OFFSET 14

typedef struct
{
  gchar *name;                  /* "<array>.npy" */
  guint64 offset;               /* of the local header */
  guint64 size;                 /* uncompressed */
  guint64 csize;                /* compressed (= size when stored) */
  guint32 crc;
  gboolean zip64_size;
  gboolean deflated;
} ZipMember;

typedef struct
{
  guint8 b[128];
  gsize n;
} Bytes;

static void
put16 (Bytes * b, guint v)
{
  b->b[b->n++] = v & 0xFF;
  b->b[b->n++] = (v >> 8) & 0xFF;
}

static void
put32 (Bytes * b, guint32 v)
{
  for (guint i = 0; i < 4; i++)
    b->b[b->n++] = (v >> (8 * i)) & 0xFF;
}

static void
put64 (Bytes * b, guint64 v)
{
  for (guint i = 0; i < 8; i++)
    b->b[b->n++] = (v >> (8 * i)) & 0xFF;
}

static guint32
clamp32 (guint64 v, gboolean zip64)
{
  return zip64 ? ZIP_U32_MAX : (guint32) v;
}

static gboolean
zip_write_local (Output * o, const ZipMember * m, GError ** error)
{
  Bytes h = { {0}, 0 };
  const gsize name_len = strlen (m->name);

  put32 (&h, ZIP_LOCAL_SIG);
  put16 (&h, m->zip64_size ? ZIP64_VERSION : ZIP_VERSION);
  put16 (&h, 0);                /* flags */
  put16 (&h, m->deflated ? 8 : 0);      /* method: deflated or stored */
  put16 (&h, 0);                /* time */
  put16 (&h, ZIP_DOS_DATE);
  put32 (&h, m->crc);           /* patched after the data */
  put32 (&h, clamp32 (m->csize, m->zip64_size));        /* patched too */
  put32 (&h, clamp32 (m->size, m->zip64_size));
  put16 (&h, name_len);
  put16 (&h, m->zip64_size ? 20 : 0);
  if (!output_write (o, h.b, h.n, error)
      || !output_write (o, m->name, name_len, error))
    return FALSE;
  if (m->zip64_size) {
    h.n = 0;
    put16 (&h, ZIP64_EXTRA_ID);
    put16 (&h, 16);
    put64 (&h, m->size);        /* uncompressed */
    put64 (&h, m->csize);       /* compressed, patched */
    return output_write (o, h.b, h.n, error);
  }
  return TRUE;
}

static gboolean
zip_write_central (Output * o, const ZipMember * m, gboolean force,
    GError ** error)
{
  Bytes h = { {0}, 0 }, x = { {0}, 0 };
  const gsize name_len = strlen (m->name);
  const gboolean zip64_offset = force || m->offset >= ZIP_U32_MAX;
  const gboolean zip64 = m->zip64_size || zip64_offset;

  /* ZIP64 extra: only the fields whose 32-bit slot holds 0xFFFFFFFF, in
   * the order uncompressed size, compressed size, offset */
  if (zip64) {
    put16 (&x, ZIP64_EXTRA_ID);
    put16 (&x, (m->zip64_size ? 16 : 0) + (zip64_offset ? 8 : 0));
    if (m->zip64_size) {
      put64 (&x, m->size);
      put64 (&x, m->csize);
    }
    if (zip64_offset)
      put64 (&x, m->offset);
  }
  put32 (&h, ZIP_CENTRAL_SIG);
  put16 (&h, zip64 ? ZIP64_VERSION : ZIP_VERSION);      /* made by: MS-DOS */
  put16 (&h, zip64 ? ZIP64_VERSION : ZIP_VERSION);      /* needed */
  put16 (&h, 0);                /* flags */
  put16 (&h, m->deflated ? 8 : 0);
  put16 (&h, 0);                /* time */
  put16 (&h, ZIP_DOS_DATE);
  put32 (&h, m->crc);
  put32 (&h, clamp32 (m->csize, m->zip64_size));
  put32 (&h, clamp32 (m->size, m->zip64_size));
  put16 (&h, name_len);
  put16 (&h, x.n);
  put16 (&h, 0);                /* comment */
  put16 (&h, 0);                /* disk */
  put16 (&h, 0);                /* internal attributes */
  put32 (&h, 0);                /* external attributes */
  put32 (&h, clamp32 (m->offset, zip64_offset));
  return output_write (o, h.b, h.n, error)
      && output_write (o, m->name, name_len, error)
      && output_write (o, x.b, x.n, error);
}

static gboolean
zip_write_end (Output * o, guint64 n, guint64 cd_offset, guint64 cd_size,
    gboolean force, GError ** error)
{
  Bytes h = { {0}, 0 };
  const gboolean zip64 = force || n >= ZIP_U16_MAX
      || cd_offset >= ZIP_U32_MAX || cd_size >= ZIP_U32_MAX;

  if (zip64) {
    const guint64 end64_offset = o->offset;
    put32 (&h, ZIP64_END_SIG);
    put64 (&h, 44);             /* size of the rest of this record */
    put16 (&h, ZIP64_VERSION);
    put16 (&h, ZIP64_VERSION);
    put32 (&h, 0);              /* this disk */
    put32 (&h, 0);              /* disk of the central directory */
    put64 (&h, n);
    put64 (&h, n);
    put64 (&h, cd_size);
    put64 (&h, cd_offset);
    put32 (&h, ZIP64_LOCATOR_SIG);
    put32 (&h, 0);              /* disk of the ZIP64 end record */
    put64 (&h, end64_offset);
    put32 (&h, 1);              /* disks */
  }
  put32 (&h, ZIP_END_SIG);
  put16 (&h, 0);
  put16 (&h, 0);
  put16 (&h, zip64 ? ZIP_U16_MAX : (guint) n);
  put16 (&h, zip64 ? ZIP_U16_MAX : (guint) n);
  put32 (&h, clamp32 (cd_size, zip64));
  put32 (&h, clamp32 (cd_offset, zip64));
  put16 (&h, 0);                /* comment */
  return output_write (o, h.b, h.n, error);
}

/* Writes @v little-endian, @n bytes, at @offset of the output. */
static gboolean
output_patch (Output * o, guint64 offset, guint64 v, guint n,
    GError ** error)
{
  guint8 le[8];

  for (guint i = 0; i < n; i++)
    le[i] = (v >> (8 * i)) & 0xFF;
  if (!output_seek (o, offset, error))
    return FALSE;
  if (fwrite (le, 1, n, o->fp) != n) {
    set_errno_error (error, errno ? errno : EIO, "Could not write",
        o->tmp_path);
    return FALSE;
  }
  return TRUE;
}

static gboolean
zip_write_member (Output * o, ZipMember * m, GstAvNpyArray * a,
    gboolean force, gboolean deflated, GError ** error)
{
  gchar header[HEADER_MAX];
  gsize hlen;
  guint64 data_bytes, data_start;

  if (!array_header_checked (a, header, &hlen, error))
    return FALSE;
  data_bytes = a->n_frames * (guint64) a->frame_bytes;  /* checked at append */
  m->name = g_strconcat (a->name, ".npy", NULL);
  m->offset = o->offset;
  m->size = hlen + data_bytes;
  m->csize = m->size;
  m->deflated = deflated;
  /* deflate may grow incompressible data a little: compressBound () */
  m->zip64_size = force || m->size >= ZIP_U32_MAX
      || (deflated && compressBound ((uLong) m->size) >= ZIP_U32_MAX);
  m->crc = 0;

  if (!zip_write_local (o, m, error))
    return FALSE;
  data_start = o->offset;
  if (deflated) {
    if (!o->zs_ready) {
      memset (&o->zs, 0, sizeof o->zs);
      if (deflateInit2 (&o->zs, 6, Z_DEFLATED, -15, 8,
              Z_DEFAULT_STRATEGY) != Z_OK) {
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
            "Could not start compressing \"%s\"", o->path);
        return FALSE;
      }
      o->zs_ready = TRUE;
      o->zbuf = g_malloc (COPY_CHUNK);
    } else if (deflateReset (&o->zs) != Z_OK) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
          "Could not compress the data of \"%s\"", o->path);
      return FALSE;
    }
    o->deflating = TRUE;
  }
  if (!member_write (o, (const guint8 *) header, hlen, &m->crc, error)
      || !output_copy_array (o, a, &m->crc, error)
      || (deflated && !output_deflate (o, Z_FINISH, error))) {
    o->deflating = FALSE;
    return FALSE;
  }
  o->deflating = FALSE;
  m->csize = o->offset - data_start;

  /* the CRC (and the compressed size) are known only now: patch the local
   * header */
  if (!output_patch (o, m->offset + ZIP_LOCAL_CRC_OFFSET, m->crc, 4, error))
    return FALSE;
  if (m->zip64_size) {
    /* the compressed size in the ZIP64 extra, after the name */
    if (!output_patch (o, m->offset + 30 + strlen (m->name) + 4 + 8,
            m->csize, 8, error))
      return FALSE;
  } else if (!output_patch (o, m->offset + ZIP_LOCAL_CRC_OFFSET + 4,
          m->csize, 4, error)) {
    return FALSE;
  }
  if (fseeko (o->fp, 0, SEEK_END) != 0) {
    set_errno_error (error, errno, "Could not seek in", o->tmp_path);
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_av_npz_save (const gchar * path, GstAvNpyArray * const *arrays,
    guint n_arrays, GstAvNpzFlags flags, GError ** error)
{
  const gboolean force = (flags & GST_AV_NPZ_FORCE_ZIP64) != 0;
  const gboolean deflated = (flags & GST_AV_NPZ_DEFLATE) != 0;
  ZipMember *members;
  guint64 cd_offset;
  Output o;
  gboolean ok = TRUE;

  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (arrays != NULL || n_arrays == 0, FALSE);

  if (!output_open (&o, path, error))
    return FALSE;
  members = g_new0 (ZipMember, MAX (n_arrays, 1));
  for (guint i = 0; i < n_arrays && ok; i++)
    ok = zip_write_member (&o, &members[i], arrays[i], force, deflated,
        error);
  cd_offset = o.offset;
  for (guint i = 0; i < n_arrays && ok; i++)
    ok = zip_write_central (&o, &members[i], force, error);
  if (ok)
    ok = zip_write_end (&o, n_arrays, cd_offset, o.offset - cd_offset, force,
        error);
  for (guint i = 0; i < n_arrays; i++)
    g_free (members[i].name);
  g_free (members);
  return output_finish (&o, ok, error);
}
