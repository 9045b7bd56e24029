// Shared by every gops kernel: the grid-stride loop over n work items.
// Included by each .cu (NVRTC compiles each file with every .cuh of this
// folder available as a header).
#pragma once

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
