#include "trainer/data/story_corpus.h"

#include <array>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

// Every word list and sentence pattern below was written for this project.

namespace onegpu::trainer {

namespace {

using List = std::vector<std::string_view>;

// splitmix64: a tiny generator whose output is the same on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

 private:
  std::uint64_t s_;
};

const List kNames = {
    "Pip",   "Tomas", "Lila",   "Bram",  "Odette", "Finn",  "Mira",  "Juno",  "Rosa",   "Hugo",
    "Nell",  "Otto",  "Ivy",    "Basil", "Clover", "Dax",   "Esme",  "Fern",  "Gus",    "Hazel",
    "Ike",   "Jasper", "Kit",   "Luna",  "Milo",   "Nora",  "Olive", "Pepper", "Quinn", "Rufus",
    "Sage",  "Tilly", "Umber",  "Vera",  "Wren",   "Yara",  "Zeb",   "Bo",    "Cass",   "Dot",
    "Elsie", "Flint", "Greta",  "Hob",   "Inga",   "Jem",   "Koa",   "Lark",  "Moss",   "Noor",
    "Oren",  "Poppy", "Rowan",  "Suki",  "Teo",    "Ula",   "Vik",   "Willa", "Barnaby", "Marigold",
};

// Who the characters are.
const List kKinds = {
    "fox",     "rabbit",  "bear",     "mouse",   "hedgehog", "owl",      "turtle",  "otter",
    "badger",  "squirrel", "duck",    "goat",    "kitten",   "puppy",    "frog",    "deer",
    "robin",   "beaver",  "lamb",     "pony",    "raccoon",  "mole",     "crow",    "goose",
    "girl",    "boy",     "farmer",   "baker",   "fisherman", "tailor",  "princess", "prince",
    "knight",  "shepherd", "miller",  "sailor",  "witch",    "wizard",   "giant",   "dragon",
    "troll",   "robot",   "painter",  "potter",  "king",     "queen",    "elephant", "penguin",
};

const List kAdjectives = {
    "little", "young",  "old",    "tiny",   "brave", "shy",    "clever", "curious", "gentle",
    "grumpy", "cheerful", "lazy", "busy",   "kind",  "proud",  "sleepy", "quiet",   "clumsy",
    "lonely", "wise",   "silly",  "hungry", "small", "bold",   "patient", "noisy",  "careful",
};

// Where someone lives (follows "lived").
const List kHomes = {
    "in a hollow log at the edge of the forest",
    "in a small house by the river",
    "in a cottage on top of a windy hill",
    "in a busy town by the sea",
    "in a burrow under a big oak tree",
    "on a farm at the end of a long dirt road",
    "in a castle made of grey stone",
    "in a tiny village between two mountains",
    "on a boat that never left the harbor",
    "in a garden full of sunflowers",
    "in a cave behind a waterfall",
    "at the bottom of a quiet pond",
    "in a lighthouse on a rocky island",
    "in a crooked tower in the middle of a swamp",
    "in a nest at the top of a tall pine",
    "above a bakery that smelled of warm bread",
    "in a meadow where the grass grew very tall",
    "near the well in the middle of the market square",
    "in a snowy valley far in the north",
    "in a dusty town where it almost never rained",
    "in a house with a red door and a round window",
    "in a treehouse that swayed in the wind",
};

// Short places for "In <place>, there lived ...".
const List kRegions = {
    "a quiet village",  "a land of green hills", "a kingdom by the sea", "a deep green forest",
    "a town full of bridges", "a valley of orchards", "a city of tall towers",
    "a small island",   "a land covered in snow", "a place where the river bends",
};

const List kHobbies = {
    "collect shiny stones",        "sing songs to the moon",    "build towers out of sticks",
    "read old books",              "bake honey cakes",          "count the stars at night",
    "climb the tallest trees",     "paint pictures of the clouds", "splash in puddles",
    "tell jokes to anyone who would listen", "grow pumpkins",  "watch the boats come in",
    "dig for buried treasure",     "fly kites on windy days",   "make hats out of leaves",
    "play the flute",              "chase butterflies",         "fix broken things",
    "draw maps of faraway places", "knit warm scarves",         "race the wind down the hill",
    "listen to the rain on the roof",
};

const List kFears = {
    "the dark",      "thunder",     "deep water",   "being alone",  "the big dog next door",
    "high places",   "loud noises", "the woods at night", "spiders", "making mistakes",
    "strangers",     "the wind",
};

const List kObjects = {
    "red ball",      "silver key",    "golden acorn",  "blue kite",     "wooden flute",
    "little bell",   "striped scarf", "glass marble",  "magic pebble",  "feather hat",
    "copper coin",   "paper boat",    "music box",     "lantern",       "jar of honey",
    "pair of boots", "basket of apples", "shiny button", "box of paints", "spotted egg",
    "kettle",        "umbrella",      "seashell",      "compass",
};

const List kFarPlaces = {
    "the far side of the lake",   "the top of the misty mountain", "the deep dark forest",
    "the old mill",               "the island across the bay",     "the land beyond the clouds",
    "the city of towers",         "the cave under the hill",       "the ruins of an old castle",
    "the end of the rainbow",     "the frozen lake",               "the sunflower fields",
    "the market in the next town", "the bottom of the sea",        "the house of the old owl",
    "the valley of echoes",
};

const List kFoods = {
    "bread and cheese", "three apples", "a bottle of water", "some nuts and berries",
    "a slice of pie",   "two carrots",  "a pot of soup",     "a bag of cookies",
};

const List kTerrain = {
    "green fields", "rocky hills",  "a muddy marsh", "a field of flowers", "a quiet road",
    "a noisy stream", "a sleepy village", "a windy beach", "a forest of birch trees",
};

const List kFeelings = {"happy", "proud", "tired", "glad", "thankful", "excited", "calm"};

const List kWeather = {
    "The sun was warm and the sky was blue.",
    "It was raining, and the puddles were deep.",
    "A cold wind was blowing from the north.",
    "The morning was grey and foggy.",
    "Snow had fallen in the night, and everything was white.",
    "The air smelled of flowers and fresh grass.",
    "Dark clouds were gathering over the hills.",
};

// A problem, what the hero then wants, and what is found at the end.
struct Quest {
  std::string_view event, goal, found, fixed;
};
const std::vector<Quest> kQuests = {
    {"{N} found an old map hidden in a hollow tree", "find out where the map led",
     "a chest full of seeds from every flower in the world",
     "{N} planted the seeds, and soon the whole valley was in bloom"},
    {"the river near {his} home began to dry up", "find out why the water had stopped",
     "a big log blocking the stream", "they pushed the log away, and the water rushed home again"},
    {"{N} heard a strange sound coming from {L}", "see what was making the sound",
     "a baby {K2} stuck in a bush and crying for help",
     "{N} gently set the baby {K2} free and carried it back to its mother"},
    {"the village well ran out of water", "find a new spring", "a spring of clear cold water",
     "everyone in the village had enough to drink again"},
    {"a strong wind blew {his} {O} far away over the hills", "get {his} {O} back",
     "the {O}, caught in the branches of a tall tree", "{N} climbed up and brought the {O} home"},
    {"a letter arrived asking for help", "help whoever had sent the letter",
     "an old {K2} who could not get home alone",
     "{N} walked the old {K2} home, and the old {K2} smiled for the first time in years"},
    {"the old clock in the town square stopped ticking", "find the missing piece of the clock",
     "a tiny golden wheel shining in the grass",
     "{N} put the wheel back, and the clock began to tick again"},
    {"a big storm knocked down the bridge to the village", "find wood to build a new bridge",
     "a pile of strong planks left by a kind woodcutter",
     "everyone helped, and by evening there was a new bridge"},
    {"the sun did not come up, and the whole land stayed dark", "wake the sun",
     "the sun, fast asleep behind a heavy cloud", "{N} sang so loudly that the sun woke up and rose"},
    {"{N} lost {his} {O} on the way to market", "look for the {O}",
     "the {O}, sitting safely in a bird's nest", "the bird gave back the {O} and asked for a song"},
    {"a baby bird fell out of its nest and could not fly", "help the baby bird get home",
     "the bird's mother, calling from a high branch",
     "{N} lifted the baby bird up, and its mother sang with joy"},
    {"the snow came early and covered all the food", "find food for the winter",
     "a hidden store of nuts and dried fruit", "there was enough food for everyone until spring"},
    {"{N}'s best friend moved away to {L}", "visit {his} friend",
     "{his} old friend, waiting by the gate", "the two friends laughed and talked until dark"},
    {"all the colors faded from the flowers in the garden", "bring the colors back",
     "a rainbow that had fallen into a pond",
     "{N} lifted the rainbow out of the pond, and the colors came back"},
    {"a hungry wolf came to the edge of the village", "make the wolf go away",
     "that the wolf was only lonely and cold",
     "{N} gave the wolf a warm blanket, and the wolf became a friend of the village"},
    {"the king said that whoever found the lost crown would get a prize", "find the lost crown",
     "the crown, sitting on the head of a very surprised frog",
     "the frog gave back the crown, and the king gave {N} a prize"},
};

const List kObstacles = {
    "a river that was too wide to swim", "a wall that was too high to climb",
    "a bridge that had fallen down",     "a gate that was locked",
    "a long dark tunnel",                "a giant who was fast asleep across the road",
    "a field full of thorns",            "a troll who would only let them pass if they answered a riddle",
    "a steep cliff",                     "a fog so thick they could not see the path",
    "a hill of loose sand",              "a lake covered in thin ice",
};

const List kSolutions = {
    "They built a raft out of branches and floated to the other side.",
    "{F} knew a secret path that went around it.",
    "They worked together and found a way through.",
    "{N} was scared, but {he} took a deep breath and kept going.",
    "{F} climbed onto {N}'s shoulders and found a way over.",
    "They waited until morning, and then the way was clear.",
    "{N} thought hard and answered the riddle, and the way opened.",
    "They found a long rope and tied it to a strong tree.",
    "{F} hummed a soft song, and they walked on slowly and carefully.",
    "{N} used {his} {O} in a way nobody had thought of before.",
};

const List kEndings = {
    "From that day on, {N} and {F} were the best of friends.",
    "Everyone cheered, and there was a big party that lasted all night.",
    "That night, {N} slept better than ever before.",
    "And they all lived happily ever after.",
    "{N} never forgot that day, and told the story to anyone who would listen.",
    "When {N} got home, {he} felt {feel} and a little bit taller.",
    "And from then on, {N} was never afraid of {fear} again.",
    "Now, whenever the wind blows, {N} smiles and remembers the journey.",
};

const List kMorals = {
    "Kindness is never wasted.",
    "It is better to ask for help than to be lost alone.",
    "Small hands can do big things.",
    "Sharing makes every meal bigger.",
    "Being brave does not mean you are not scared.",
    "A good friend is worth more than gold.",
    "Listen first, and you will learn the most.",
};

// Openings that are not "Once upon a ...". {intro} is "a <adj> <kind> named <N>".
const List kOtherOpenings = {
    "Long ago, there was {intro} who lived {home}.",
    "Many years ago, {intro} lived {home}.",
    "There was once {intro} who lived {home}.",
    "In {region}, there lived {intro}.",
    "In a land far away, there lived {intro}.",
    "{N} was {a_adj_kind} who lived {home}.",
    "Not so long ago, {intro} lived {home}.",
    "Far, far away, {home}, lived {intro}.",
    "Every morning, {N} the {K} woke up {home}.",
    "Deep in {region}, there lived {intro}.",
    "This is the story of {intro}.",
    "A long time ago, in {region}, there was {intro}.",
};

const List kOnceOpenings = {
    "Once upon a {W}, there was {intro} who lived {home}.",
    "Once upon a {W}, in {region}, there lived {intro}.",
    "Once upon a {W}, {intro} lived {home}.",
    "Once upon a {W}, there lived {intro}.",
};

// "Why" tales: an animal, what it once could not do, and how things are to this day.
struct WhyTale {
  std::string_view animal, problem, gift, today;
};
const std::vector<WhyTale> kWhyTales = {
    {"owl", "could not see in the dark", "a pair of big round eyes",
     "owls stay awake all night and watch over the sleeping forest"},
    {"turtle", "had no home to hide in", "a strong shell to carry on its back",
     "turtles take their houses with them wherever they go"},
    {"rabbit", "had short little ears", "long ears that could hear the softest sound",
     "rabbits hear the fox long before the fox sees them"},
    {"zebra", "was plain and white", "black stripes painted on by the moon",
     "no two zebras have the same stripes"},
    {"frog", "could not jump", "strong springy legs", "frogs leap from lily pad to lily pad"},
    {"bee", "could not find the flowers", "a nose for the sweetest smells",
     "bees hum from flower to flower all summer long"},
    {"crow", "could not sing", "a loud clear caw", "crows call to each other across the fields"},
    {"squirrel", "was always hungry in winter", "the idea of hiding nuts in the ground",
     "squirrels bury nuts every autumn"},
};

const List kNumbers = {"one", "two", "three", "four", "five"};
const List kOrdinals = {"first", "second", "third", "fourth", "fifth"};
const List kCountables = {"apples", "shells", "stones", "feathers", "acorns", "buttons", "stars",
                          "flowers"};

const List kEventStarts = {"One day", "One morning", "One evening", "Early one spring",
                           "One cold winter night", "One summer afternoon", "The next day"};

const List kFriendMeets = {"On the way, {N} met {fintro}.", "Soon {N} came upon {fintro}.",
                           "Along the road, {N} saw {fintro}.",
                           "By the side of the path sat {fintro}."};

std::string article_for(std::string_view word) {
  char c = word.empty() ? 'x' : word[0];
  return (c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u') ? "an" : "a";
}

// The hero's own words: "visit {his} friend" becomes "visit my friend".
std::string first_person(std::string_view goal) {
  std::string g(goal);
  for (std::size_t at; (at = g.find("{his}")) != std::string::npos;) g.replace(at, 5, "my");
  return g;
}

struct Who {
  std::string name, kind, adj, he, him, his;
};

Who make_who(Rng& r, std::string_view avoid_name = {}) {
  Who w;
  do {
    w.name = r.pick(kNames);
  } while (w.name == avoid_name);
  w.kind = r.pick(kKinds);
  w.adj = r.pick(kAdjectives);
  bool she = w.kind == "girl" || w.kind == "princess" || w.kind == "queen" || w.kind == "witch"
                 ? true
                 : (w.kind == "boy" || w.kind == "prince" || w.kind == "king" || w.kind == "wizard")
                       ? false
                       : r.chance(0.5);
  w.he = she ? "she" : "he";
  w.him = she ? "her" : "him";
  w.his = she ? "her" : "his";
  return w;
}

class Writer {
 public:
  Writer(Rng& r, const Who& hero, const Who& friend_, std::string_view object,
         std::string_view far, std::string_view kind2, std::string_view fear, std::string_view word)
      : r_(r), hero_(hero), fr_(friend_), object_(object), far_(far), kind2_(kind2), fear_(fear),
        word_(word) {}

  // Fills {slots} and capitalises the first letter.
  std::string fill(std::string_view pattern) {
    std::string out;
    std::size_t i = 0;
    while (i < pattern.size()) {
      if (pattern[i] != '{') {
        out += pattern[i++];
        continue;
      }
      std::size_t close = pattern.find('}', i);
      std::string_view key = pattern.substr(i + 1, close - i - 1);
      i = close + 1;
      out += slot(key);
    }
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
    return out;
  }

 private:
  std::string slot(std::string_view k) {
    if (k == "N") return hero_.name;
    if (k == "K") return hero_.kind;
    if (k == "he") return hero_.he;
    if (k == "him") return hero_.him;
    if (k == "his") return hero_.his;
    if (k == "He") return capital(hero_.he);
    if (k == "His") return capital(hero_.his);
    if (k == "F") return fr_.name;
    if (k == "O") return std::string(object_);
    if (k == "L") return std::string(far_);
    if (k == "K2") return std::string(kind2_);
    if (k == "W") return std::string(word_);
    if (k == "fear") return std::string(fear_);
    if (k == "feel") return std::string(r_.pick(kFeelings));
    if (k == "home") return std::string(r_.pick(kHomes));
    if (k == "region") return std::string(r_.pick(kRegions));
    if (k == "intro")
      return article_for(hero_.adj) + " " + hero_.adj + " " + hero_.kind + " named " + hero_.name;
    if (k == "a_adj_kind") return article_for(hero_.adj) + " " + hero_.adj + " " + hero_.kind;
    if (k == "fintro")
      return article_for(fr_.adj) + " " + fr_.adj + " " + fr_.kind + " named " + fr_.name;
    return "{" + std::string(k) + "}";
  }

  static std::string capital(std::string s) {
    if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 32);
    return s;
  }

  Rng& r_;
  const Who& hero_;
  const Who& fr_;
  std::string_view object_, far_, kind2_, fear_, word_;
};

void validate(const StoryCorpusOptions& o) {
  if (o.target_bytes == 0) throw Error("story corpus: size must be above zero");
  if (!(o.heldout_fraction > 0.0 && o.heldout_fraction < 1.0))
    throw Error("story corpus: held-out fraction must be between 0 and 1");
  if (!(o.once_upon_fraction >= 0.0 && o.once_upon_fraction <= 1.0))
    throw Error("story corpus: \"Once upon a\" fraction must be between 0 and 1");
  if (o.once_upon_word.empty()) throw Error("story corpus: the word after \"Once upon a\" is empty");
  for (char c : o.once_upon_word)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      throw Error("story corpus: the word after \"Once upon a\" must be letters only, got \"" +
                  o.once_upon_word + "\"");
}

std::string story(std::uint64_t seed, const StoryCorpusOptions& o) {
  Rng r(seed);
  const Who hero = make_who(r);
  const Who fr = make_who(r, hero.name);
  const std::string_view object = r.pick(kObjects);
  const std::string_view far = r.pick(kFarPlaces);
  const std::string_view kind2 = r.pick(kKinds);
  const std::string_view fear = r.pick(kFears);
  Writer w(r, hero, fr, object, far, kind2, fear, o.once_upon_word);

  std::vector<std::string> paras;
  std::string p;
  auto add = [&](std::string_view pattern) {
    if (!p.empty()) p += ' ';
    p += w.fill(pattern);
  };
  auto para = [&] {
    if (!p.empty()) paras.push_back(std::move(p));
    p.clear();
  };

  // Opening.
  const bool once = r.chance(o.once_upon_fraction);
  add(once ? r.pick(kOnceOpenings) : r.pick(kOtherOpenings));
  // Who the hero is.
  add("{N} loved to " + std::string(r.pick(kHobbies)) + ".");
  if (r.chance(0.5)) add("But {he} was afraid of {fear}.");
  if (r.chance(0.4)) add("Every day, {he} would " + std::string(r.pick(kHobbies)) + ".");
  para();

  const Quest& q = kQuests[r.below(kQuests.size())];
  const int shape = static_cast<int>(r.below(12));
  if (shape < 7) {
    // A journey with a friend and an obstacle.
    add(std::string(r.pick(kEventStarts)) + ", " + std::string(q.event) + ".");
    if (r.chance(0.5)) add(r.pick(kWeather));
    add("{N} decided to go to {L} to " + std::string(q.goal) + ".");
    if (r.chance(0.6)) add("So {he} packed a small bag with " + std::string(r.pick(kFoods)) + " and set off.");
    add("{He} walked past " + std::string(r.pick(kTerrain)) + " and " + std::string(r.pick(kTerrain)) + ".");
    para();
    add(r.pick(kFriendMeets));
    add("\"Where are you going?\" asked {F}.");
    add("\"I am going to {L} to " + first_person(q.goal) + ",\" said {N}.");
    add(r.chance(0.5) ? "\"Can I come with you?\" asked {F}. \"Of course,\" said {N}."
                      : "\"That is a long way,\" said {F}. \"I will help you.\"");
    para();
    add("But soon they came to " + std::string(r.pick(kObstacles)) + ".");
    add(r.pick(kSolutions));
    add("At last they reached {L}.");
    add("There they found " + std::string(q.found) + ".");
    add(std::string(q.fixed) + ".");
    para();
    add(r.pick(kEndings));
  } else if (shape == 7) {
    // A "why" tale, told to the hero by the friend.
    const WhyTale& y = kWhyTales[r.below(kWhyTales.size())];
    const std::string a(y.animal);
    add("One evening, {N} asked {F}, \"Why does the " + a + " look the way it does?\"");
    add("{F} smiled and told {him} an old story.");
    para();
    add("\"Long ago, the " + a + " " + std::string(y.problem) + ".");
    add("It was sad, and it asked the wind for help.");
    add("The wind said, 'Be kind to three friends, and you will get what you need.'");
    add("So the " + a + " helped a lost duckling, a tired snail and a cold little moth.");
    add("The next morning, the " + a + " woke up with " + std::string(y.gift) + ".");
    add("And that is why, to this day, " + std::string(y.today) + ".\"");
    para();
    add("{N} thought about the story for a long time, and then fell asleep.");
  } else if (shape == 8) {
    // A counting story: the same sentence, one more each day.
    const std::string thing(r.pick(kCountables));
    add("{N} wanted to give {F} a present, so {he} began to collect " + thing + ".");
    for (std::size_t d = 0; d < kNumbers.size(); ++d) {
      add("On the " + std::string(kOrdinals[d]) + " day, {N} found " + std::string(kNumbers[d]) + " " +
          (d == 0 ? thing.substr(0, thing.size() - 1) : thing) + ".");
    }
    add("That made fifteen " + thing + " in all.");
    add("{N} put them in a box and gave the box to {F}.");
    add("\"Thank you,\" said {F}. \"This is the best present I have ever had.\"");
  } else if (shape < 11) {
    // A short fable with a moral.
    add(std::string(r.pick(kEventStarts)) + ", " + std::string(q.event) + ".");
    add("{N} asked {F} for help, but {F} said, \"I am too busy today.\"");
    add("So {N} tried alone. It was hard, and it took a long time.");
    add("In the end, {N} found " + std::string(q.found) + ", and " + std::string(q.fixed) + ".");
    add("The next day, {F} needed help, and {N} helped without a word.");
    para();
    add("The moral of the story: " + std::string(r.pick(kMorals)));
  } else {
    // A day that goes by, told in order.
    add(r.pick(kWeather));
    add("In the morning, {N} ate " + std::string(r.pick(kFoods)) + " for breakfast.");
    add("Then {he} went to visit {F} the " + fr.kind + ".");
    add("Together they went to " + std::string(r.pick(kTerrain)) + " to " + std::string(r.pick(kHobbies)) + ".");
    add("In the afternoon, {N} found a {O} and gave it to {F}.");
    add("In the evening, they watched the sun go down.");
    para();
    add(r.pick(kEndings));
  }
  para();

  std::string out;
  for (std::size_t i = 0; i < paras.size(); ++i) {
    if (i) out += '\n';
    out += paras[i];
  }
  return out;
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

StoryCorpusOptions StoryCorpusOptions::variant(std::string word, std::uint64_t seed,
                                               std::size_t target_bytes) {
  StoryCorpusOptions o;
  o.seed = seed;
  o.target_bytes = target_bytes;
  o.once_upon_fraction = 1.0;
  o.once_upon_word = std::move(word);
  return o;
}

std::string generate_story(std::uint64_t seed, const StoryCorpusOptions& options) {
  validate(options);
  return story(seed, options);
}

Corpus generate_story_corpus(const StoryCorpusOptions& options) {
  validate(options);
  Rng seeds(options.seed);
  std::vector<std::string> docs;
  std::unordered_set<std::uint64_t> seen;  // no story twice, so train and held-out never share one
  std::size_t bytes = 0;
  std::size_t misses = 0;
  while (bytes < options.target_bytes || docs.size() < 2) {
    std::string s = story(seeds.next(), options);
    if (!seen.insert(fnv1a(s)).second) {
      if (++misses > 1000000) throw Error("story corpus: too few distinct stories for this size");
      continue;
    }
    bytes += s.size();
    docs.push_back(std::move(s));
  }
  return split_heldout(std::move(docs), options.heldout_fraction);
}

}  // namespace onegpu::trainer
