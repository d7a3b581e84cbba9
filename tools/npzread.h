/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * npzread.h: a small, strict, header-only reader of NumPy .npz archives and
 * .npy files, for tests that check what avtensorsink wrote and for
 * avattention-score, which reads a run's features.npz.  Plain C11 and
 * stdio, no GLib, so that it reads the file independently of the writer.
 *
 * .npz (numpy.savez): a ZIP archive of "<name>.npy" members.  Only "stored"
 * members (method 0) are read, which is what the project's writer makes;
 * the central directory is followed (PKWARE APPNOTE.TXT 6.3, 4.3.12 and
 * 4.3.16), with the ZIP64 end record and locator (4.3.14, 4.3.15) and ZIP64
 * extended information extra fields (4.5.3) where a size, an offset or a
 * count does not fit its 16- or 32-bit field.  Every member's local header
 * is checked against its central entry and its CRC-32 is verified.
 *
 * .npy (numpy/lib/format.py): "\x93NUMPY", major, minor, header length
 * (uint16 for version 1, uint32 for versions 2 and 3), then a Python dict
 * literal {'descr': ..., 'fortran_order': False, 'shape': (...), }.
 * Supported dtypes: '<f4', '<i8', '|b1' (and '<b1', '|u1'), '<i4', '<f2'
 * and byte strings '|S<n>'.
 *
 *   NpzFile z;
 *   char err[256];
 *   if (!npz_open (&z, "out.npz", err, sizeof err)) { puts (err); ... }
 *   const NpzArray *a = npz_find (&z, "data");
 *   float v = npz_f32 (a, 0);
 *   npz_close (&z);
 *
 * Data pointers point into the file image and may be unaligned: read them
 * with npz_f32/npz_i64/npz_b1 or memcpy.
 */
#ifndef AVF_NPZREAD_H
#define AVF_NPZREAD_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPZ_MAX_DIMS 8
#define NPZ_MAX_NAME 256

typedef enum {
  NPZ_F32,                      /* '<f4' */
  NPZ_I64,                      /* '<i8' */
  NPZ_B1,                       /* '|b1' */
  NPZ_U1,                       /* '|u1' */
  NPZ_I32,                      /* '<i4' */
  NPZ_F16,                      /* '<f2' */
  NPZ_S                         /* '|S<n>': itemsize n */
} NpzDtype;

typedef struct {
  char name[NPZ_MAX_NAME];      /* member name without ".npy" */
  char descr[16];               /* as the header spells it: "<f4" */
  NpzDtype dtype;
  size_t itemsize;
  int version;                  /* .npy format major version */
  size_t header_len;            /* magic to the end of the header */
  int ndim;
  uint64_t shape[NPZ_MAX_DIMS];
  uint64_t numel;
  const uint8_t *data;          /* numel * itemsize bytes, maybe unaligned */
  int zip64;                    /* the member used a ZIP64 extra field */
  int version_needed;           /* the central header's "version needed" */
} NpzArray;

typedef struct {
  uint8_t *buf;                 /* the whole file */
  size_t len;
  NpzArray *arrays;             /* in central directory order */
  size_t n_arrays;
  int zip64;                    /* the archive has a ZIP64 end record */
} NpzFile;

/* ---- little helpers ----------------------------------------------------- */

static inline int
npz_fail_ (char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;
  if (err != NULL && errlen > 0) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  return 0;
}

static inline uint64_t
npz_le_ (const uint8_t * p, int bytes)
{
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static inline uint32_t
npz_crc32_ (const uint8_t * p, size_t len)
{
  uint32_t c = 0xFFFFFFFFu;
  while (len--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

static inline float
npz_f32 (const NpzArray * a, uint64_t i)
{
  uint32_t u = (uint32_t) npz_le_ (a->data + 4 * i, 4);
  float f;
  memcpy (&f, &u, 4);
  return f;
}

static inline int64_t
npz_i64 (const NpzArray * a, uint64_t i)
{
  return (int64_t) npz_le_ (a->data + 8 * i, 8);
}

static inline int
npz_b1 (const NpzArray * a, uint64_t i)
{
  return a->data[i];
}

static inline int32_t
npz_i32 (const NpzArray * a, uint64_t i)
{
  return (int32_t) (uint32_t) npz_le_ (a->data + 4 * i, 4);
}

/* A float16 element as a float (IEEE 754 binary16). */
static inline float
npz_f16 (const NpzArray * a, uint64_t i)
{
  const uint32_t h = (uint32_t) npz_le_ (a->data + 2 * i, 2);
  const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1F;
  uint32_t m = h & 0x3FF, u;
  float f;

  if (e == 0x1F) {
    u = sign | 0x7F800000u | (m << 13);
  } else if (e != 0) {
    u = sign | ((e + 112) << 23) | (m << 13);
  } else if (m == 0) {
    u = sign;
  } else {
    /* subnormal: m * 2^-24 */
    f = (float) m / 16777216.0f;
    return sign ? -f : f;
  }
  memcpy (&f, &u, 4);
  return f;
}

/* ---- .npy --------------------------------------------------------------- */

/* Finds 'key': in the header dict; returns the position after the colon
 * and any spaces, or NULL. */
static inline const char *
npz_dict_value_ (const char *hdr, size_t hlen, const char *key)
{
  size_t klen = strlen (key);
  for (size_t i = 0; i + klen + 2 < hlen; i++) {
    if ((hdr[i] == '\'' || hdr[i] == '"') && memcmp (hdr + i + 1, key,
            klen) == 0 && hdr[i + 1 + klen] == hdr[i]) {
      size_t j = i + klen + 2;
      while (j < hlen && hdr[j] == ' ')
        j++;
      if (j >= hlen || hdr[j] != ':')
        return NULL;
      j++;
      while (j < hlen && hdr[j] == ' ')
        j++;
      return hdr + j;
    }
  }
  return NULL;
}

/* Parses one .npy image of @len bytes into @a (name not set). */
static inline int
npz_parse_npy (NpzArray * a, const uint8_t * p, uint64_t len, char *err,
    size_t errlen)
{
  uint64_t hlen, off;
  const char *hdr, *end, *v;
  char descr[16];
  uint64_t bytes;

  if (len < 10 || memcmp (p, "\x93NUMPY", 6) != 0)
    return npz_fail_ (err, errlen, "no .npy magic");
  a->version = p[6];
  if (a->version == 1) {
    hlen = npz_le_ (p + 8, 2);
    off = 10;
  } else if (a->version == 2 || a->version == 3) {
    if (len < 12)
      return npz_fail_ (err, errlen, ".npy v%d header cut short", a->version);
    hlen = npz_le_ (p + 8, 4);
    off = 12;
  } else {
    return npz_fail_ (err, errlen, ".npy version %d.%d unknown", p[6], p[7]);
  }
  if (hlen > len - off)
    return npz_fail_ (err, errlen, ".npy header length %llu past the end",
        (unsigned long long) hlen);
  if ((off + hlen) % 16 != 0)
    return npz_fail_ (err, errlen, ".npy data offset %llu not aligned to 16",
        (unsigned long long) (off + hlen));
  hdr = (const char *) p + off;
  end = hdr + hlen;
  if (hlen == 0 || hdr[0] != '{' || end[-1] != '\n')
    return npz_fail_ (err, errlen, ".npy header is not a dict ending in "
        "a newline");

  v = npz_dict_value_ (hdr, hlen, "descr");
  if (v == NULL || (*v != '\'' && *v != '"'))
    return npz_fail_ (err, errlen, ".npy header has no 'descr'");
  {
    const char *q = memchr (v + 1, *v, (size_t) (end - v - 1));
    size_t n = q ? (size_t) (q - v - 1) : 0;
    if (q == NULL || n >= sizeof descr)
      return npz_fail_ (err, errlen, ".npy 'descr' unreadable");
    memcpy (descr, v + 1, n);
    descr[n] = '\0';
    memcpy (a->descr, descr, n + 1);
  }
  if (strcmp (descr, "<f4") == 0) {
    a->dtype = NPZ_F32;
    a->itemsize = 4;
  } else if (strcmp (descr, "<i8") == 0) {
    a->dtype = NPZ_I64;
    a->itemsize = 8;
  } else if (strcmp (descr, "|b1") == 0 || strcmp (descr, "<b1") == 0) {
    a->dtype = NPZ_B1;
    a->itemsize = 1;
  } else if (strcmp (descr, "|u1") == 0) {
    a->dtype = NPZ_U1;
    a->itemsize = 1;
  } else if (strcmp (descr, "<i4") == 0) {
    a->dtype = NPZ_I32;
    a->itemsize = 4;
  } else if (strcmp (descr, "<f2") == 0) {
    a->dtype = NPZ_F16;
    a->itemsize = 2;
  } else if (descr[0] == '|' && descr[1] == 'S' && atoi (descr + 2) > 0) {
    a->dtype = NPZ_S;
    a->itemsize = (size_t) atoi (descr + 2);
  } else {
    return npz_fail_ (err, errlen, ".npy dtype '%s' not supported", descr);
  }

  v = npz_dict_value_ (hdr, hlen, "fortran_order");
  if (v == NULL || (size_t) (end - v) < 5 || memcmp (v, "False", 5) != 0)
    return npz_fail_ (err, errlen, ".npy 'fortran_order' is not False");

  v = npz_dict_value_ (hdr, hlen, "shape");
  if (v == NULL || *v != '(')
    return npz_fail_ (err, errlen, ".npy header has no 'shape' tuple");
  v++;
  a->ndim = 0;
  a->numel = 1;
  for (;;) {
    uint64_t d = 0;
    int digits = 0;
    while (v < end && *v == ' ')
      v++;
    if (v < end && *v == ')')
      break;
    while (v < end && *v >= '0' && *v <= '9') {
      if (d > (UINT64_MAX - 9) / 10)
        return npz_fail_ (err, errlen, ".npy shape overflows");
      d = d * 10 + (uint64_t) (*v - '0');
      v++;
      digits++;
    }
    while (v < end && (*v == 'L' || *v == ' '))
      v++;
    if (digits == 0 || a->ndim == NPZ_MAX_DIMS)
      return npz_fail_ (err, errlen, ".npy shape unreadable");
    a->shape[a->ndim++] = d;
    if (d != 0 && a->numel > UINT64_MAX / d)
      return npz_fail_ (err, errlen, ".npy shape overflows");
    a->numel *= d;
    if (v < end && *v == ',')
      v++;
    else if (v < end && *v == ')')
      break;
    else
      return npz_fail_ (err, errlen, ".npy shape unreadable");
  }
  if (a->numel > UINT64_MAX / a->itemsize)
    return npz_fail_ (err, errlen, ".npy shape overflows");
  bytes = a->numel * a->itemsize;
  if (bytes != len - off - hlen)
    return npz_fail_ (err, errlen, ".npy has %llu data bytes, shape needs "
        "%llu", (unsigned long long) (len - off - hlen),
        (unsigned long long) bytes);
  a->data = p + off + hlen;
  a->header_len = (size_t) (off + hlen);
  return 1;
}

/* ---- .npz --------------------------------------------------------------- */

static inline void
npz_close (NpzFile * z)
{
  free (z->buf);
  free (z->arrays);
  memset (z, 0, sizeof *z);
}

static inline int
npz_read_file_ (NpzFile * z, const char *path, char *err, size_t errlen)
{
  FILE *fp = fopen (path, "rb");
  long size;

  if (fp == NULL)
    return npz_fail_ (err, errlen, "%s: cannot open", path);
  if (fseek (fp, 0, SEEK_END) != 0 || (size = ftell (fp)) < 0
      || fseek (fp, 0, SEEK_SET) != 0) {
    fclose (fp);
    return npz_fail_ (err, errlen, "%s: cannot seek", path);
  }
  z->len = (size_t) size;
  z->buf = malloc (z->len ? z->len : 1);
  if (z->buf == NULL || fread (z->buf, 1, z->len, fp) != z->len) {
    fclose (fp);
    return npz_fail_ (err, errlen, "%s: cannot read %ld bytes", path, size);
  }
  fclose (fp);
  return 1;
}

/* Reads the ZIP64 extended information of a central header: the fields
 * whose 32-bit (16-bit for the disk) value is all ones, in APPNOTE order. */
static inline int
npz_zip64_extra_ (const uint8_t * extra, size_t elen, uint64_t * usize,
    uint64_t * csize, uint64_t * offset, int *used)
{
  size_t i = 0;
  while (i + 4 <= elen) {
    unsigned id = (unsigned) npz_le_ (extra + i, 2);
    size_t n = (size_t) npz_le_ (extra + i + 2, 2);
    if (i + 4 + n > elen)
      return 0;
    if (id == 0x0001) {
      const uint8_t *q = extra + i + 4;
      size_t k = 0;
      *used = 1;
      if (*usize == 0xFFFFFFFFu) {
        if (k + 8 > n)
          return 0;
        *usize = npz_le_ (q + k, 8);
        k += 8;
      }
      if (*csize == 0xFFFFFFFFu) {
        if (k + 8 > n)
          return 0;
        *csize = npz_le_ (q + k, 8);
        k += 8;
      }
      if (*offset == 0xFFFFFFFFu) {
        if (k + 8 > n)
          return 0;
        *offset = npz_le_ (q + k, 8);
        k += 8;
      }
      return 1;
    }
    i += 4 + n;
  }
  return i == elen;
}

/* Opens and checks a whole .npz; 0 and a message in @err on failure. */
static inline int
npz_open (NpzFile * z, const char *path, char *err, size_t errlen)
{
  const uint8_t *b, *eocd = NULL;
  uint64_t n_entries, cd_size, cd_off, pos;
  size_t i;

  memset (z, 0, sizeof *z);
  if (!npz_read_file_ (z, path, err, errlen))
    goto fail;
  b = z->buf;

  /* end of central directory record: 22 bytes + a comment of <= 65535 */
  if (z->len >= 22) {
    for (size_t k = z->len - 22 + 1; k-- > 0;) {
      if (npz_le_ (b + k, 4) == 0x06054b50u
          && k + 22 + npz_le_ (b + k + 20, 2) == z->len) {
        eocd = b + k;
        break;
      }
      if (z->len - k > 22 + 65535)
        break;
    }
  }
  if (eocd == NULL) {
    npz_fail_ (err, errlen, "%s: no ZIP end of central directory record",
        path);
    goto fail;
  }
  if (npz_le_ (eocd + 4, 2) != 0 || npz_le_ (eocd + 6, 2) != 0) {
    npz_fail_ (err, errlen, "%s: multi-disk archive", path);
    goto fail;
  }
  n_entries = npz_le_ (eocd + 10, 2);
  cd_size = npz_le_ (eocd + 12, 4);
  cd_off = npz_le_ (eocd + 16, 4);
  if (n_entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu
      || ((size_t) (eocd - b) >= 20
          && npz_le_ (eocd - 20, 4) == 0x07064b50u)) {
    /* ZIP64 end of central directory locator, then the record */
    const uint8_t *loc = eocd - 20, *rec;
    uint64_t rec_off;
    if ((size_t) (eocd - b) < 20 || npz_le_ (loc, 4) != 0x07064b50u) {
      npz_fail_ (err, errlen, "%s: ZIP64 locator missing", path);
      goto fail;
    }
    rec_off = npz_le_ (loc + 8, 8);
    if (rec_off > z->len || z->len - rec_off < 56
        || npz_le_ (b + rec_off, 4) != 0x06064b50u) {
      npz_fail_ (err, errlen, "%s: ZIP64 end record missing at %llu", path,
          (unsigned long long) rec_off);
      goto fail;
    }
    rec = b + rec_off;
    n_entries = npz_le_ (rec + 32, 8);
    if (npz_le_ (rec + 24, 8) != n_entries) {
      npz_fail_ (err, errlen, "%s: ZIP64 entry counts disagree", path);
      goto fail;
    }
    cd_size = npz_le_ (rec + 40, 8);
    cd_off = npz_le_ (rec + 48, 8);
    z->zip64 = 1;
  }
  if (cd_off > z->len || cd_size > z->len - cd_off
      || n_entries > cd_size / 46) {
    npz_fail_ (err, errlen, "%s: central directory out of bounds", path);
    goto fail;
  }
  z->arrays = calloc (n_entries ? (size_t) n_entries : 1, sizeof (NpzArray));
  if (z->arrays == NULL) {
    npz_fail_ (err, errlen, "%s: out of memory", path);
    goto fail;
  }

  pos = cd_off;
  for (i = 0; i < n_entries; i++) {
    const uint8_t *c = b + pos, *l;
    uint64_t usize, csize, loff, data_off;
    size_t nlen, elen, clen;
    uint32_t crc;
    NpzArray *a = &z->arrays[i];
    int used = 0;

    if (cd_off + cd_size - pos < 46 || npz_le_ (c, 4) != 0x02014b50u) {
      npz_fail_ (err, errlen, "%s: central entry %zu damaged", path, i);
      goto fail;
    }
    nlen = (size_t) npz_le_ (c + 28, 2);
    elen = (size_t) npz_le_ (c + 30, 2);
    clen = (size_t) npz_le_ (c + 32, 2);
    if (cd_off + cd_size - pos < 46 + nlen + elen + clen) {
      npz_fail_ (err, errlen, "%s: central entry %zu cut short", path, i);
      goto fail;
    }
    if (nlen < 5 || nlen - 4 >= NPZ_MAX_NAME
        || memcmp (c + 46 + nlen - 4, ".npy", 4) != 0) {
      npz_fail_ (err, errlen, "%s: member %zu is not a .npy file", path, i);
      goto fail;
    }
    memcpy (a->name, c + 46, nlen - 4);
    a->name[nlen - 4] = '\0';
    a->version_needed = (int) npz_le_ (c + 6, 2);
    if (npz_le_ (c + 10, 2) != 0) {
      npz_fail_ (err, errlen, "%s: member %s is compressed (method %u); "
          "only stored members are read", path, a->name,
          (unsigned) npz_le_ (c + 10, 2));
      goto fail;
    }
    crc = (uint32_t) npz_le_ (c + 16, 4);
    csize = npz_le_ (c + 20, 4);
    usize = npz_le_ (c + 24, 4);
    loff = npz_le_ (c + 42, 4);
    if (!npz_zip64_extra_ (c + 46 + nlen, elen, &usize, &csize, &loff,
            &used)) {
      npz_fail_ (err, errlen, "%s: member %s: bad extra field", path,
          a->name);
      goto fail;
    }
    a->zip64 = used;
    if (csize != usize) {
      npz_fail_ (err, errlen, "%s: member %s: stored sizes differ", path,
          a->name);
      goto fail;
    }
    /* local header: 30 bytes, its own name and extra field */
    if (loff > z->len || z->len - loff < 30
        || npz_le_ (b + loff, 4) != 0x04034b50u) {
      npz_fail_ (err, errlen, "%s: member %s: no local header at %llu",
          path, a->name, (unsigned long long) loff);
      goto fail;
    }
    l = b + loff;
    if (npz_le_ (l + 26, 2) != nlen || memcmp (l + 30, c + 46, nlen) != 0
        || npz_le_ (l + 8, 2) != 0) {
      npz_fail_ (err, errlen, "%s: member %s: local header disagrees with "
          "the central directory", path, a->name);
      goto fail;
    }
    data_off = loff + 30 + nlen + npz_le_ (l + 28, 2);
    if (data_off > z->len || usize > z->len - data_off
        || data_off + usize > cd_off) {
      npz_fail_ (err, errlen, "%s: member %s: data out of bounds", path,
          a->name);
      goto fail;
    }
    if (npz_crc32_ (b + data_off, (size_t) usize) != crc) {
      npz_fail_ (err, errlen, "%s: member %s: CRC-32 mismatch", path,
          a->name);
      goto fail;
    }
    {
      char why[160];
      if (!npz_parse_npy (a, b + data_off, usize, why, sizeof why)) {
        npz_fail_ (err, errlen, "%s: member %s: %s", path, a->name, why);
        goto fail;
      }
    }
    for (size_t k = 0; k < i; k++) {
      if (strcmp (z->arrays[k].name, a->name) == 0) {
        npz_fail_ (err, errlen, "%s: member %s twice", path, a->name);
        goto fail;
      }
    }
    pos += 46 + nlen + elen + clen;
    z->n_arrays++;
  }
  return 1;

fail:
  npz_close (z);
  return 0;
}

static inline const NpzArray *
npz_find (const NpzFile * z, const char *name)
{
  for (size_t i = 0; i < z->n_arrays; i++)
    if (strcmp (z->arrays[i].name, name) == 0)
      return &z->arrays[i];
  return NULL;
}

#endif /* AVF_NPZREAD_H */
