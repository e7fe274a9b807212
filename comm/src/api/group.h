// Group calls, per calling thread as in NCCL: between cfxGroupStart and cfxGroupEnd operations are
// collected instead of run; cfxGroupEnd hands each communicator its operations as one batch, so
// they progress together. An argument error inside a group fails the whole group: nothing of it
// runs, and cfxGroupEnd returns the error.
#pragma once

#include <memory>
#include <vector>

#include "conflux/conflux.h"
#include "ops/op.h"
#include "ops/p2p.h"
#include "outcome.h"
#include "vector_coll.h"

namespace conflux {
class Communicator;
}

namespace conflux::api {

bool inGroup();
void groupStart();
void groupFail(const Outcome& error);
// Throws Error on failure.
void groupEnd();

// Runs one operation now: blocking for a NULL stream, queued on the stream otherwise (or added to
// the open group).
void submit(cfxComm_t comm, Communicator& impl, cfxStream_t stream, std::unique_ptr<Op> op);
// A small send or receive inside an open group, kept as a value (Communicator::quickSend,
// quickRecv) while the group holds only such values, for one communicator and stream: cfxGroupEnd
// then runs them on this thread without building operations (Engine::runQuick). Returns false
// (nothing kept) outside a group or when the group holds anything else: submit it then.
bool submitQuick(cfxComm_t comm, Communicator& impl, cfxStream_t stream, const P2pOp& op);
// One collective call: outside a group, one on the mailbox path runs without a heap operation when
// it can (Communicator::quickCollective); else as submit.
void submitCollective(cfxComm_t comm, Communicator& impl, cfxStream_t stream, const CollArgs& a);
// The same for the operations of one call, which run together as a group's do.
void submitAll(cfxComm_t comm, Communicator& impl, cfxStream_t stream, std::vector<std::unique_ptr<Op>> ops);
// One v-collective call: outside a group, without building operations when it can
// (runQuickVector); else its batch (makeVectorCollective), as submitAll.
void submitVector(cfxComm_t comm, Communicator& impl, cfxStream_t stream, VectorArgs args);

}  // namespace conflux::api
