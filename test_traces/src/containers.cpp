// Containers grown and changed in a loop, then a crash.  At past positions LLDB's formatters walk std::map's and
// std::list's links and read std::string's characters, which the trace and the known states may not give: a map
// showed its first element three times, a list of three "size=0 {}" (tests/test_unknown_containers.py).
// Build: g++ -O0 -g containers.cpp -o containers
#include <deque>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

volatile int sink;
int *volatile nowhere = nullptr;

__attribute__((noinline)) void crash() { *nowhere = 1; }

int main() {
  std::vector<int> numbers;
  std::string text = "hi";
  std::map<int, std::string> squares;
  std::unordered_map<std::string, int> names;
  std::list<int> recent;
  std::deque<int> both_ends;
  for (int i = 0; i < 6; i++) {
    numbers.push_back(i * 10 + 1);
    text += static_cast<char>('a' + i);
    text += "XYZWVUTSRQ"; // past the small-string buffer
    squares[i * 3] = std::to_string(i * 7);
    names[std::to_string(i)] = i * 100;
    recent.push_front(i + 1000);
    both_ends.push_back(i * 2);
    both_ends.push_front(-i);
    sink = static_cast<int>(numbers.size());
  }
  numbers.erase(numbers.begin() + 1);
  squares.erase(3);
  recent.pop_back();
  crash();
  return 0;
}
