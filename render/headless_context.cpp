#include "render/headless_context.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <cstring>
#include <vector>

#include "render/error.h"
#include "render/gl.h"

namespace onegpu::render {

namespace {

EGLDisplay open_display(std::string& how) {
  auto get_platform_display =
      reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (get_platform_display) {
    EGLDisplay d = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (d != EGL_NO_DISPLAY && eglInitialize(d, nullptr, nullptr)) {
      how = "EGL surfaceless";
      return d;
    }
    // Headless GPU machines: the first EGL device.
    auto query_devices =
        reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
    if (query_devices) {
      EGLDeviceEXT devs[8];
      EGLint n = 0;
      if (query_devices(8, devs, &n) && n > 0) {
        for (EGLint i = 0; i < n; ++i) {
          d = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devs[i], nullptr);
          if (d != EGL_NO_DISPLAY && eglInitialize(d, nullptr, nullptr)) {
            how = "EGL device";
            return d;
          }
        }
      }
    }
  }
  EGLDisplay d = eglGetDisplay(EGL_DEFAULT_DISPLAY);
  if (d != EGL_NO_DISPLAY && eglInitialize(d, nullptr, nullptr)) {
    how = "EGL default display";
    return d;
  }
  return EGL_NO_DISPLAY;
}

}  // namespace

HeadlessContext::HeadlessContext() {
  std::string how;
  EGLDisplay d = open_display(how);
  if (d == EGL_NO_DISPLAY) throw Error("no EGL display for headless rendering (is Mesa's libegl-mesa0 installed?)");
  display_ = d;
  if (!eglBindAPI(EGL_OPENGL_API)) throw Error("EGL cannot bind the desktop OpenGL API");

  const EGLint config_attribs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE,
                                   EGL_OPENGL_BIT, EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8,
                                   EGL_BLUE_SIZE, 8, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint n = 0;
  const char* exts = eglQueryString(d, EGL_EXTENSIONS);
  bool no_config = exts && std::strstr(exts, "EGL_KHR_no_config_context");
  if (!no_config && (!eglChooseConfig(d, config_attribs, &config, 1, &n) || n == 0))
    throw Error("EGL has no OpenGL configuration");

  const EGLint ctx_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
                                EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  EGLContext c = eglCreateContext(d, no_config ? EGL_NO_CONFIG_KHR : config, EGL_NO_CONTEXT, ctx_attribs);
  if (c == EGL_NO_CONTEXT) throw Error("EGL cannot create an OpenGL 3.3 core context");
  context_ = c;
  if (!eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, c))
    throw Error("EGL cannot make the headless context current (no surfaceless support)");
  if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(eglGetProcAddress)))
    throw Error("cannot load OpenGL functions through EGL");
  description_ = gl_description() + " · " + how;
}

HeadlessContext::~HeadlessContext() {
  if (display_) {
    eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (context_) eglDestroyContext(display_, context_);
    eglTerminate(display_);
  }
}

std::string gl_description() {
  auto str = [](GLenum e) {
    const char* s = reinterpret_cast<const char*>(glGetString(e));
    return std::string(s ? s : "?");
  };
  // "4.5 (Core Profile) Mesa 22.3.6" and "llvmpipe (LLVM 15.0.6, 256 bits)": keep the heads.
  auto head = [](std::string s, const char* cut) { auto p = s.find(cut); return p == std::string::npos ? s : s.substr(0, p); };
  return "GL " + head(str(GL_VERSION), " (") + " " + head(str(GL_RENDERER), " (");
}

}  // namespace onegpu::render
