#include "pixels.h"

std::vector<Blob> blobs(const Image& img, int x0, int y0, int x1, int y1, const std::function<bool(Rgb)>& keep) {
  std::vector<char> seen(static_cast<std::size_t>(img.w) * img.h, 0);
  std::vector<Blob> out;
  std::vector<std::pair<int, int>> stack;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      std::size_t i = static_cast<std::size_t>(y) * img.w + x;
      if (seen[i] || !keep(img.at(x, y))) continue;
      Blob b;
      glm::vec2 sum{0.0f};
      stack.push_back({x, y});
      seen[i] = 1;
      while (!stack.empty()) {
        auto [cx, cy] = stack.back();
        stack.pop_back();
        ++b.pixels;
        sum += glm::vec2(cx + 0.5f, cy + 0.5f);
        const int dx[] = {1, -1, 0, 0}, dy[] = {0, 0, 1, -1};
        for (int k = 0; k < 4; ++k) {
          int nx = cx + dx[k], ny = cy + dy[k];
          if (nx < x0 || ny < y0 || nx >= x1 || ny >= y1) continue;
          std::size_t j = static_cast<std::size_t>(ny) * img.w + nx;
          if (seen[j] || !keep(img.at(nx, ny))) continue;
          seen[j] = 1;
          stack.push_back({nx, ny});
        }
      }
      b.centroid = sum / static_cast<float>(b.pixels);
      out.push_back(b);
    }
  return out;
}
