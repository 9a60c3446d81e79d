// placeholder: replaced when the owning library lands
#include <iostream>
#include "commands.hpp"
namespace gridrun::app {
int cmd_collect(const Args&) { std::cerr << "gridrun collect: not built yet\n"; return 1; }
int cmd_report(const Args&) { std::cerr << "gridrun report: not built yet\n"; return 1; }
}
