// placeholder: replaced when the owning library lands
#include <iostream>
#include "commands.hpp"
namespace gridrun::app {
int cmd_run(const Args&) { std::cerr << "gridrun run: not built yet\n"; return 1; }
int cmd_simulate(const Args&) { std::cerr << "gridrun simulate: not built yet\n"; return 1; }
}
