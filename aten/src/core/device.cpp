#include "ember/device.h"

#include <algorithm>
#include <cctype>

namespace ember {

Device Device::parse(const std::string& s) {
  std::string type = s, index;
  auto colon = s.find(':');
  if (colon != std::string::npos) { type = s.substr(0, colon); index = s.substr(colon + 1); }
  DeviceType t;
  if (type == "cpu") t = DeviceType::CPU;
  else if (type == "cuda") t = DeviceType::CUDA;
  else EMBER_FAIL(Runtime, "Expected one of cpu, cuda device type at start of device string: ", s);
  int idx = -1;
  if (colon != std::string::npos) {
    EMBER_CHECK(!index.empty() && index.size() < 4 &&
                std::all_of(index.begin(), index.end(), [](char c) { return std::isdigit((unsigned char)c); }),
                Runtime, "Invalid device string: '", s, "'");
    idx = std::stoi(index);
  }
  return Device(t, idx);
}

std::string Device::str() const {
  std::string s = type == DeviceType::CPU ? "cpu" : "cuda";
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

}  // namespace ember
