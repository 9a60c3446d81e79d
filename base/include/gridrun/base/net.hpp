// A free TCP port on this machine, for the MASTER_PORT of a command job (torch.distributed's
// env:// rendezvous: rank 0 listens there). Why here: the scheduler picks one per job and
// gridrun-exec picks one for a one-rank job; base is where system calls shared by modules live.
#pragma once

#include <string>

namespace gridrun::base {

// A port the kernel reports free on 127.0.0.1 right now (bind to port 0, read it, close). Another
// process may take it before the program binds it; the job then fails at its rendezvous and is
// retried like any failure. Throws std::runtime_error when no socket can be made.
int free_local_port();

// The first IPv4 address of the network interface `name` (e.g. "eth0"), dotted; "" when there is
// no such interface or it has none. What rank 0 of a multi-host command job publishes as
// MASTER_ADDR when the site names its interfaces (gridrun submit --network): the host name may not
// resolve on the other hosts, or resolve to another network.
std::string interface_ipv4(const std::string& name);

}  // namespace gridrun::base
