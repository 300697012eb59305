// VdevTreeTarget; see vdev_target.h.
#include "zfs/zio/vdev_target.h"

namespace uzfs {

Status VdevTreeTarget::Read(uint32_t vdev, uint64_t offset, std::span<uint8_t> buf,
                            const BlockVerify& verify, bool scrub) {
  Vdev* v = root_.child(vdev);
  if (!v) return Status::Corruption("no top-level vdev " + std::to_string(vdev));
  return v->Read(offset, buf, verify, nullptr, scrub ? ReadMode::kScrub : ReadMode::kNormal);
}

void VdevTreeTarget::ReadMany(uint32_t vdev, std::span<ManyRead> reads) {
  Vdev* v = root_.child(vdev);
  if (!v) {
    for (ManyRead& r : reads) r.status = Status::Corruption("no top-level vdev " + std::to_string(vdev));
    return;
  }
  // BlockVerify and BlockVerifier are the same std::function type.
  std::vector<VdevRead> vr(reads.size());
  for (size_t i = 0; i < reads.size(); i++) vr[i] = VdevRead{reads[i].offset, reads[i].buf, reads[i].verify, {}};
  v->ReadMany(vr);
  for (size_t i = 0; i < reads.size(); i++) reads[i].status = std::move(vr[i].status);
}

Status VdevTreeTarget::Write(uint32_t vdev, uint64_t offset, std::span<const uint8_t> buf) {
  Vdev* v = root_.child(vdev);
  if (!v) return Status::InvalidArgument("no top-level vdev " + std::to_string(vdev));
  return v->Write(offset, buf);
}

void VdevTreeTarget::WriteMany(uint32_t vdev, std::span<ManyWrite> writes) {
  Vdev* v = root_.child(vdev);
  if (!v) {
    for (ManyWrite& w : writes) w.status = Status::InvalidArgument("no top-level vdev " + std::to_string(vdev));
    return;
  }
  std::vector<VdevWrite> vw(writes.size());
  for (size_t i = 0; i < writes.size(); i++) vw[i] = VdevWrite{writes[i].offset, writes[i].buf, {}};
  v->WriteMany(vw);
  for (size_t i = 0; i < writes.size(); i++) writes[i].status = std::move(vw[i].status);
}

void VdevTreeTarget::WriteManyVdevs(std::span<VdevWrites> batches) {
  std::vector<std::vector<VdevWrite>> vw(batches.size());
  std::vector<VdevWriteBatch> across;
  for (size_t b = 0; b < batches.size(); b++) {
    std::span<ManyWrite> writes = batches[b].writes;
    Vdev* v = root_.child(batches[b].vdev);
    if (!v) {
      for (ManyWrite& w : writes)
        w.status = Status::InvalidArgument("no top-level vdev " + std::to_string(batches[b].vdev));
      continue;
    }
    vw[b].resize(writes.size());
    for (size_t i = 0; i < writes.size(); i++) vw[b][i] = VdevWrite{writes[i].offset, writes[i].buf, {}};
    across.push_back(VdevWriteBatch{v, vw[b]});
  }
  WriteManyAcross(across);
  for (size_t b = 0; b < batches.size(); b++) {
    for (size_t i = 0; i < vw[b].size(); i++) batches[b].writes[i].status = std::move(vw[b][i].status);
  }
}

}  // namespace uzfs
