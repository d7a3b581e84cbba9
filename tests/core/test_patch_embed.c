/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Patch embedding against PyTorch's Conv2d (fixtures), with padded row
 * strides and 4-byte pixel layouts.
 */
#include "avf_test.h"
#include "patch_embed.h"

/* Copies the packed RGB fixture into `layout` with `pad` bytes of garbage
 * after every row, embeds it and compares with the reference. */
static void
check (const char *file, AvfPixelLayout layout, size_t pad)
{
  AvfSafetensors *fx = avf_test_open_fixture (file);
  if (fx == NULL)
    return;
  AvfWeights *w = avf_test_fixture_weights (fx, NULL);
  const int width = avf_test_meta_int (fx, "image_width");
  const int height = avf_test_meta_int (fx, "image_height");
  uint8_t *rgb = avf_test_tensor (fx, "rgb", AVF_DTYPE_U8, NULL);
  size_t n_ref;
  float *ref = avf_test_tensor (fx, "patches", AVF_DTYPE_F32, &n_ref);
  AvfPatchEmbed *pe = NULL;
  AvfError err;
  if (w && rgb && ref) {
    AVF_CHECK (avf_patch_embed_new (&pe, w, width, height, &err) == AVF_OK,
        "%s", err.message);
    size_t stride;
    uint8_t *img = avf_test_pack_rgb (rgb, width, height, layout, pad, 0xA5,
        &stride);
    float *out = malloc (n_ref * sizeof (float));
    if (pe) {
      avf_patch_embed_forward (pe, out, img, stride, layout);
      char what[128];
      snprintf (what, sizeof what, "%s bpp %d pad %zu", file, layout.bpp,
          pad);
      AVF_CHECK (n_ref == (size_t) w->cfg.N * w->cfg.E, "size");
      AVF_CHECK_CLOSE (out, ref, n_ref, 1e-4, what);
    }
    free (out);
    free (img);
  }
  avf_patch_embed_free (pe);
  avf_weights_free (w);
  free (rgb);
  free (ref);
  avf_safetensors_free (fx);
}

static void
test_default_packed_rgb (void)
{
  check ("fusion_default.safetensors", avf_pixel_layout_rgb (), 0);
}

static void
test_default_padded_stride (void)
{
  check ("fusion_default.safetensors", avf_pixel_layout_rgb (), 13);
}

static void
test_small_bgrx (void)
{
  AvfPixelLayout bgrx = { 4, 2, 1, 0 };
  check ("fusion_small.safetensors", bgrx, 0);
}

static void
test_small_xrgb_padded (void)
{
  AvfPixelLayout xrgb = { 4, 1, 2, 3 };
  check ("fusion_small.safetensors", xrgb, 64);
}

static void
test_sizes_refused (void)
{
  AvfConfig cfg = avf_config_default ();
  AvfWeights *w;
  AvfPatchEmbed *pe = NULL;
  AvfError err;
  avf_weights_new_default (&w, &cfg, 0, NULL);
  AVF_CHECK (avf_patch_embed_new (&pe, w, 230, 224, &err) == AVF_ERR_INVALID,
      "230 wide");
  AVF_CHECK_CONTAINS (err.message, "multiples of 16");
  AVF_CHECK (avf_patch_embed_new (&pe, w, 320, 240, &err) == AVF_ERR_SHAPE,
      "320x240");
  AVF_CHECK_CONTAINS (err.message, "20 x 15 = 300 patches");
  AVF_CHECK_CONTAINS (err.message, "196");
  AVF_CHECK (avf_patch_embed_new (&pe, w, 0, 0, &err) == AVF_ERR_INVALID,
      "0x0");
  /* a 14 x 14 grid in another shape: 16 x 3136 is 1 x 196 patches */
  AVF_CHECK (avf_patch_embed_new (&pe, w, 16, 3136, &err) == AVF_OK,
      "1 x 196 grid: %s", err.message);
  int cols, rows;
  avf_patch_embed_grid (pe, &cols, &rows);
  AVF_CHECK (cols == 1 && rows == 196, "grid %d x %d", cols, rows);
  avf_patch_embed_free (pe);
  avf_weights_free (w);
}

AVF_TEST_MAIN (AVF_TEST (test_default_packed_rgb),
    AVF_TEST (test_default_padded_stride), AVF_TEST (test_small_bgrx),
    AVF_TEST (test_small_xrgb_padded), AVF_TEST (test_sizes_refused))
