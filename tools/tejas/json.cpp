#include "json.h"

#include <cmath>
#include <cstdio>

namespace tejas::cli {

std::string json_escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

void JsonWriter::separator() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) os_ << ",";
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separator();
  os_ << "{";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  first_.pop_back();
  os_ << "}";
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separator();
  os_ << "[";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  first_.pop_back();
  os_ << "]";
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  separator();
  os_ << "\"" << json_escape(k) << "\":";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  separator();
  os_ << "\"" << json_escape(s) << "\"";
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) return null();
  separator();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  os_ << buf;
  return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
  separator();
  os_ << v;
  return *this;
}
JsonWriter& JsonWriter::value(uint64_t v) {
  separator();
  os_ << v;
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  separator();
  os_ << (b ? "true" : "false");
  return *this;
}
JsonWriter& JsonWriter::value(const std::optional<double>& v) { return v ? value(*v) : null(); }
JsonWriter& JsonWriter::null() {
  separator();
  os_ << "null";
  return *this;
}

}  // namespace tejas::cli
