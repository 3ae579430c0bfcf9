// IbvVerbs: the Verbs interface (rdma/verbs.h) over the real libibverbs. This is
// the only translation unit of Weft that includes <infiniband/verbs.h>; everything else
// sees plain Weft structs.
//
// ibv_get_device_list failing with ENOSYS (a kernel without RDMA support) is reported
// as an empty device list, like a kernel with RDMA support but no device, so callers
// fall back to TCP the same way in both cases; NoDeviceReason() says which it was.
//
// Thread-safety: as libibverbs (see verbs.h). The object itself holds no mutable state
// besides the last ListDevices diagnosis, guarded by a mutex.
#ifndef WEFT_RDMA_VERBS_IBV_H_
#define WEFT_RDMA_VERBS_IBV_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "rdma/verbs.h"

namespace weft::rdma {

class IbvVerbs : public Verbs {
 public:
  IbvVerbs() = default;

  // Why the last ListDevices() returned no device, e.g. "ibv_get_device_list returned
  // 0 devices (Function not implemented: the kernel has no RDMA support)". Empty if it
  // found devices or was never called.
  std::string NoDeviceReason() const;

  absl::StatusOr<std::vector<DeviceInfo>> ListDevices() override;
  absl::StatusOr<std::unique_ptr<VerbsContext>> OpenDevice(absl::string_view name) override;
  absl::StatusOr<PortAttributes> QueryPort(VerbsContext* context, uint32_t port) override;
  absl::StatusOr<std::vector<GidEntry>> QueryGidTable(VerbsContext* context) override;
  absl::StatusOr<GidEntry> QueryGid(VerbsContext* context, uint32_t port, uint32_t index) override;
  absl::StatusOr<std::unique_ptr<VerbsPd>> AllocPd(VerbsContext* context) override;
  absl::StatusOr<std::unique_ptr<VerbsCompChannel>> CreateCompChannel(
      VerbsContext* context) override;
  absl::StatusOr<std::unique_ptr<VerbsCq>> CreateCq(VerbsContext* context, int cqe,
                                                    VerbsCompChannel* channel) override;
  absl::Status RequestCqNotification(VerbsCq* cq) override;
  absl::StatusOr<VerbsCq*> WaitCqEvent(VerbsCompChannel* channel, absl::Duration timeout) override;
  absl::StatusOr<std::unique_ptr<VerbsQp>> CreateRcQp(VerbsPd* pd, VerbsCq* send_cq,
                                                      VerbsCq* recv_cq,
                                                      const QpCapabilities& caps) override;
  absl::StatusOr<std::unique_ptr<VerbsQp>> CreateUdQp(VerbsPd* pd, VerbsCq* send_cq,
                                                      VerbsCq* recv_cq,
                                                      const QpCapabilities& caps) override;
  absl::StatusOr<std::unique_ptr<VerbsAh>> CreateAh(VerbsPd* pd, const AddressVector& av) override;
  absl::StatusOr<std::unique_ptr<VerbsCq>> CreateTimestampedCq(VerbsContext* context, int cqe,
                                                               VerbsCompChannel* channel) override;
  absl::Status ModifyQp(VerbsQp* qp, const QpAttributes& attr, uint32_t attr_mask) override;
  absl::StatusOr<QpState> QueryQpState(VerbsQp* qp) override;
  absl::StatusOr<std::unique_ptr<VerbsMr>> RegisterMr(VerbsPd* pd, void* addr, size_t length,
                                                      uint32_t access) override;
  absl::Status PostSend(VerbsQp* qp, absl::Span<const SendWorkRequest> wrs) override;
  absl::Status PostRecv(VerbsQp* qp, absl::Span<const RecvWorkRequest> wrs) override;
  absl::StatusOr<int> PollCq(VerbsCq* cq, absl::Span<WorkCompletion> out) override;

 private:
  mutable absl::Mutex mu_;
  std::string no_device_reason_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::rdma

#endif  // WEFT_RDMA_VERBS_IBV_H_
