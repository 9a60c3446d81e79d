// placeholder: replaced when the owning library lands
#include <iostream>
#include "commands.hpp"
namespace gridrun::app {
int cmd_submit(const Args&) { std::cerr << "gridrun submit: not built yet\n"; return 1; }
int cmd_status(const Args&) { std::cerr << "gridrun status: not built yet\n"; return 1; }
int cmd_cancel(const Args&) { std::cerr << "gridrun cancel: not built yet\n"; return 1; }
}
