#include <gtest/gtest.h>

#include <glm/glm.hpp>

#include "render/camera.h"

using namespace onegpu::render;

static void expect_near(glm::vec2 a, glm::vec2 b, float tol) {
  EXPECT_NEAR(a.x, b.x, tol);
  EXPECT_NEAR(a.y, b.y, tol);
}

TEST(Camera, PixelAndWorldRoundTrip) {
  Camera c;
  c.center = {3.0f, -2.0f};
  c.height = 10.0f;
  c.viewport = {1600.0f, 900.0f};
  for (glm::vec2 w : {glm::vec2(3, -2), glm::vec2(0, 0), glm::vec2(-4.5f, 1.25f)})
    expect_near(c.pixel_to_world(c.world_to_pixel(w)), w, 1e-4f);
  expect_near(c.world_to_pixel(c.center), {800.0f, 450.0f}, 1e-3f);
  // y runs up in the world and down in pixels.
  EXPECT_LT(c.world_to_pixel({3.0f, 0.0f}).y, 450.0f);
  EXPECT_FLOAT_EQ(c.world_per_pixel(), 10.0f / 900.0f);
}

TEST(Camera, ViewProjectionMapsVisibleCornersToClipCorners) {
  Camera c;
  c.center = {1.0f, 2.0f};
  c.height = 4.0f;
  c.viewport = {800.0f, 400.0f};
  Rect v = c.visible();
  glm::vec4 lo = c.view_projection() * glm::vec4(v.min, 0, 1);
  glm::vec4 hi = c.view_projection() * glm::vec4(v.max, 0, 1);
  EXPECT_NEAR(lo.x, -1.0f, 1e-5f);
  EXPECT_NEAR(lo.y, -1.0f, 1e-5f);
  EXPECT_NEAR(hi.x, 1.0f, 1e-5f);
  EXPECT_NEAR(hi.y, 1.0f, 1e-5f);
}

TEST(Camera, FitShowsTheWholeRectCentred) {
  Rect wide{{0, 0}, {40, 10}}, tall{{0, 0}, {2, 30}};
  for (Rect r : {wide, tall}) {
    Camera c = Camera::fit(r, {1280, 720}, 0.05f);
    Rect v = c.visible();
    EXPECT_LE(v.min.x, r.min.x);
    EXPECT_LE(v.min.y, r.min.y);
    EXPECT_GE(v.max.x, r.max.x);
    EXPECT_GE(v.max.y, r.max.y);
    expect_near(c.center, r.center(), 1e-5f);
    // Tight in one direction: the margin, no more.
    float slack = std::min((v.size().x - r.size().x) / r.size().x, (v.size().y - r.size().y) / r.size().y);
    EXPECT_NEAR(slack, 0.1f, 1e-4f);
  }
}

TEST(Dive, EndsAtBothCameras) {
  Camera a = Camera::fit({{0, 0}, {40, 20}}, {1280, 720});
  Camera b = Camera::fit(Rect::centered({4.5f, 12.5f}, {1.2f, 1.2f}), {1280, 720});
  Camera s = dive(a, b, 0.0f), e = dive(a, b, 1.0f);
  expect_near(s.center, a.center, 1e-4f);
  EXPECT_NEAR(s.height, a.height, 1e-4f);
  expect_near(e.center, b.center, 1e-4f);
  EXPECT_NEAR(e.height, b.height, 1e-4f);
}

TEST(Dive, ZoomIsGeometricAndMonotone) {
  Camera a = Camera::fit({{0, 0}, {40, 20}}, {1280, 720});
  Camera b = Camera::fit(Rect::centered({4.5f, 12.5f}, {1.2f, 1.2f}), {1280, 720});
  float prev = a.height;
  for (int i = 1; i <= 20; ++i) {
    Camera c = dive(a, b, i / 20.0f);
    EXPECT_LT(c.height, prev);
    prev = c.height;
  }
  // Halfway in time is halfway in log-zoom.
  EXPECT_NEAR(dive(a, b, 0.5f).height, std::sqrt(a.height * b.height), 1e-3f);
}

TEST(Dive, TheFixedPointStaysPutOnScreen) {
  Camera a = Camera::fit({{0, 0}, {40, 20}}, {1280, 720});
  Camera b = Camera::fit(Rect::centered({4.5f, 12.5f}, {1.2f, 1.2f}), {1280, 720});
  // The point at the same screen position under both cameras.
  glm::vec2 f = (a.center * b.height - b.center * a.height) / (b.height - a.height);
  glm::vec2 px = a.world_to_pixel(f);
  expect_near(b.world_to_pixel(f), px, 0.05f);
  for (float x : {0.2f, 0.5f, 0.8f}) expect_near(dive(a, b, x).world_to_pixel(f), px, 0.05f);
}

TEST(Dive, PanOnlyWhenHeightsMatch) {
  Camera a, b;
  a.viewport = b.viewport = {100, 100};
  a.height = b.height = 5.0f;
  a.center = {0, 0};
  b.center = {10, 0};
  expect_near(dive(a, b, 0.25f).center, {2.5f, 0.0f}, 1e-5f);
}
