// A free TCP port on this machine, for the MASTER_PORT of a command job (torch.distributed's
// env:// rendezvous: rank 0 listens there). Why here: the scheduler picks one per job and
// gridrun-exec picks one for a one-rank job; base is where system calls shared by modules live.
#pragma once

namespace gridrun::base {

// A port the kernel reports free on 127.0.0.1 right now (bind to port 0, read it, close). Another
// process may take it before the program binds it; the job then fails at its rendezvous and is
// retried like any failure. Throws std::runtime_error when no socket can be made.
int free_local_port();

}  // namespace gridrun::base
