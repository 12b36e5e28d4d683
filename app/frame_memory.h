#pragma once
// How the drawing process keeps its memory between frames: a malloc setting for the whole
// process, so it is made once at start-up by the program (app_main) and by the benchmarks that
// draw, not by the renderer.

namespace onegpu::app {

// A software GL (llvmpipe) allocates its vertex buffers for every draw and frees them after;
// at a few megabytes each, glibc handed them back to the kernel every time (munmap, or a heap
// trim) and the next frame faulted the same pages in again: with 32,768 shapes that was half
// of the drawing thread's time. This keeps freed blocks up to those sizes in the process; the
// cost is that up to 128 MB once freed may stay resident. Idempotent; nothing off glibc.
void keep_frame_memory();

}  // namespace onegpu::app
