// Replay driver for fuzz targets built without libFuzzer: feeds every file
// of the given corpus directories (or files) to LLVMFuzzerTestOneInput once.
// A crash, sanitizer report or abort fails the ctest test that runs it; an
// empty corpus is an error so a missing seed set cannot pass silently.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t count = 0;
  for (int i = 1; i < argc; i++) {
    std::vector<std::filesystem::path> files;
    std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(arg);
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), {});
      LLVMFuzzerTestOneInput(buf.data(), buf.size());
      count++;
    }
  }
  if (count == 0) {
    std::fprintf(stderr, "replay: no corpus files found\n");
    return 1;
  }
  std::printf("replay: %zu inputs ran cleanly\n", count);
  return 0;
}
