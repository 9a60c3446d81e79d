// placeholder: replaced when the owning library lands
#include <iostream>
#include "commands.hpp"
namespace gridrun::app {
int cmd_plan(const Args&) { std::cerr << "gridrun plan: not built yet\n"; return 1; }
}
