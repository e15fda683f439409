#pragma once
// glibc returns every large block (> 32 MB at most) to the OS on free, so each
// training step pays page faults to touch fresh memory for every big temporary.
// Keeping freed memory in the process makes the next step reuse warm pages:
// measured 15.7 s -> 10.8 s per Translution ViT-A/12 training step at batch 32
// (docs/benchmarks.md). The cost: resident memory does not shrink after a peak.
// TRANSLUTION_KEEP_FREED_MEMORY=0 turns it off.
namespace translution {

void keep_freed_memory();

}  // namespace translution
