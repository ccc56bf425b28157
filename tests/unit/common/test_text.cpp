// test_text.cpp: common/text.h: names that hide or reorder text are refused, echoed text stays one
// line, and file names drop bidirectional controls.
#include <gtest/gtest.h>

#include <string>

#include "common/paths.h"
#include "common/text.h"

namespace balerbench {
namespace {

const std::string kRlo = "\xE2\x80\xAE";   // U+202E RIGHT-TO-LEFT OVERRIDE
const std::string kNel = "\xC2\x85";       // U+0085 NEXT LINE (C1)
const std::string kLsep = "\xE2\x80\xA8";  // U+2028 LINE SEPARATOR

TEST(Text, Utf8IsDecodedAndMalformedBytesAreNot) {
  EXPECT_EQ(utf8_at("a", 0).code_point, 'a');
  const Utf8Char e = utf8_at("\xC3\xA9", 0);  // é
  EXPECT_EQ(e.code_point, 0xE9u);
  EXPECT_EQ(e.length, 2u);
  EXPECT_EQ(utf8_at(kRlo, 0).code_point, 0x202Eu);
  EXPECT_EQ(utf8_at("\xE9t\xE9", 0).length, 0u);  // Latin-1 é
  EXPECT_EQ(utf8_at("\xC0\xAF", 0).length, 0u);   // an overlong '/'
  EXPECT_EQ(utf8_at("\xED\xA0\x80", 0).length, 0u);  // a surrogate
  EXPECT_EQ(utf8_at("\xE2\x80", 0).length, 0u);   // cut short
}

TEST(Text, NamesWithBidiControlsC1ControlsOrLineSeparatorsAreRefused) {
  EXPECT_EQ(hidden_character_problem("cpu_sweep"), "");
  EXPECT_EQ(hidden_character_problem("été 2024"), "");
  EXPECT_EQ(hidden_character_problem("abc" + kRlo + "txt.exe"), "holds a bidirectional control (U+202E) at byte 3");
  EXPECT_EQ(hidden_character_problem("a" + kNel), "holds a control character (U+0085) at byte 1");
  EXPECT_EQ(hidden_character_problem(kLsep), "holds a line separator (U+2028) at byte 0");
  EXPECT_EQ(hidden_character_problem("a\nb"), "holds a control character (U+000A) at byte 1");
  EXPECT_EQ(hidden_character_problem("zero\xE2\x80\x8Bwidth"), "holds an invisible character (U+200B) at byte 4");
  EXPECT_EQ(hidden_character_problem("caf\xE9"), "is not valid UTF-8 (byte 0xE9 at byte 3)");
}

TEST(Text, MessagesAreOneLineEscapedAndCutShort) {
  EXPECT_EQ(message_text("plain été"), "plain été");
  EXPECT_EQ(message_text("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(message_text("x" + kRlo + "y" + kNel), "x\\u202Ey\\u0085");
  EXPECT_EQ(message_text("caf\xE9"), "caf\\xE9");
  EXPECT_EQ(message_text(std::string(100000, '7'), 10), "7777777777... (100000 bytes in all)");
  EXPECT_EQ(message_text("short", 10), "short");
  EXPECT_EQ(one_line("*** in database main ***\nPage 3: btreeInitPage() returns error code 11\n"),
            "*** in database main ***; Page 3: btreeInitPage() returns error code 11");
}

// A report's file names keep letters of any script, never a control that reorders what a file
// manager shows ("abc<RLO>txt.exe" would show as "abcexe.txt").
TEST(Text, SafeFileNamesDropBidiControlsAndLineSeparators) {
  EXPECT_EQ(safe_file_name("été"), "été");
  EXPECT_EQ(safe_file_name("abc" + kRlo + "txt.exe"), "abc___txt.exe");
  EXPECT_EQ(safe_file_name("a" + kLsep + "b"), "a___b");
  EXPECT_EQ(safe_file_name("a" + kNel + "b"), "a__b");
}

}  // namespace
}  // namespace balerbench
