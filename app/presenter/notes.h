#pragma once
// Presenter notes: for each chapter, what to point at on the screen and a question to put to
// the class. `onegpu --notes` prints them as Markdown, with the keys, to print as a handout.
#include <string>
#include <string_view>

namespace onegpu::app {

struct PresenterNote {
  std::string_view id;     // the chapter's id (story.h)
  std::string_view point;  // what to show on the picture
  std::string_view ask;    // a question for the room
};

// The note for a chapter id; an empty note when there is none (a test checks every chapter has one).
const PresenterNote& presenter_note(std::string_view id);

// The whole handout: keys, then each chapter's title, caption, button and note.
std::string notes_markdown();

}  // namespace onegpu::app
