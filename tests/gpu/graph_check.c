/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * graph_check.c - graph-check: blinkc's collectives captured into CUDA graphs and replayed
 * (issue 33: a call is one kernel launch on the user's stream, so capture must work). Four
 * ranks as threads of this process (blinkCommInitAll on DGX-1V devices 0-3, each on its entry of
 * BLINK_DEVICE_MAP) capture three allreduces each on their own stream, then replay the graphs
 * ten times with new inputs each time; every element of every replay is checked against the sum
 * of the ranks' inputs. Eager calls after the replays must still agree (the call numbers the
 * device keeps move on through replays). Needs a GPU: without one it says so and exits 0.
 *
 *   graph-check        exit 0 all right, 1 a wrong element or a failed call
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "blink.h"

#define RANKS 4
#define COUNT (1 << 18) /* floats per rank: 1 MiB, a few chunks */
#define CALLS 3
#define REPLAYS 10

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "graph-check: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

static int blink_ok(blinkResult_t r, const char *what)
{
    if (r != blinkSuccess)
        fprintf(stderr, "graph-check: %s: %s: %s\n", what, blinkGetErrorString(r),
                blinkGetLastError(NULL));
    return r == blinkSuccess;
}

/* Every rank's input for round k: small integers, so every sum is exact in float. */
static float input(int rank, int k, size_t i) { return (float)(rank + 1 + k + (int)(i % 7)); }

static int fill(float *const *send, float *host, int k)
{
    for (int r = 0; r < RANKS; r++) {
        for (size_t i = 0; i < COUNT; i++)
            host[i] = input(r, k, i);
        if (!cuda_ok(cudaMemcpy(send[r], host, COUNT * sizeof *host, cudaMemcpyHostToDevice),
                     "cudaMemcpy"))
            return 0;
    }
    return 1;
}

static long wrong(float *const *recv, float *host, int k)
{
    long bad = 0;
    for (int r = 0; r < RANKS; r++) {
        if (!cuda_ok(cudaMemcpy(host, recv[r], COUNT * sizeof *host, cudaMemcpyDeviceToHost),
                     "cudaMemcpy"))
            return -1;
        for (size_t i = 0; i < COUNT; i++) {
            float want = 0;
            for (int q = 0; q < RANKS; q++)
                want += input(q, k, i);
            bad += host[i] != want;
        }
    }
    return bad;
}

int main(void)
{
    int ngpu = 0;
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
        printf("graph-check: no GPU here: nothing run\n");
        return 0;
    }
    static const int devs[RANKS] = {0, 1, 2, 3};
    blinkComm_t comms[RANKS];
    if (!blink_ok(blinkCommInitAll(comms, RANKS, devs), "blinkCommInitAll"))
        return 1;
    float *send[RANKS], *recv[RANKS], *host = malloc(COUNT * sizeof *host);
    cudaStream_t st[RANKS];
    cudaGraph_t graph[RANKS];
    cudaGraphExec_t exec[RANKS];
    int dev[RANKS], ok = host != NULL;
    for (int r = 0; r < RANKS && ok; r++)
        ok = blink_ok(blinkCommCuDevice(comms[r], &dev[r]), "blinkCommCuDevice") &&
             cuda_ok(cudaSetDevice(dev[r]), "cudaSetDevice") &&
             cuda_ok(cudaMalloc((void **)&send[r], COUNT * sizeof(float)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&recv[r], COUNT * sizeof(float)), "cudaMalloc") &&
             cuda_ok(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking), "stream");

    /* Capture: every rank's stream at once, the calls issued as a group. */
    for (int r = 0; r < RANKS && ok; r++)
        ok = cuda_ok(cudaSetDevice(dev[r]), "cudaSetDevice") &&
             cuda_ok(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeRelaxed), "capture");
    for (int c = 0; c < CALLS && ok; c++) {
        ok = blink_ok(blinkGroupStart(), "blinkGroupStart");
        for (int r = 0; r < RANKS && ok; r++)
            ok = blink_ok(blinkAllReduce(send[r], recv[r], COUNT, blinkFloat32, blinkSum,
                                         comms[r], st[r]), "blinkAllReduce (captured)");
        ok = ok && blink_ok(blinkGroupEnd(), "blinkGroupEnd");
    }
    for (int r = 0; r < RANKS && ok; r++)
        ok = cuda_ok(cudaSetDevice(dev[r]), "cudaSetDevice") &&
             cuda_ok(cudaStreamEndCapture(st[r], &graph[r]), "cudaStreamEndCapture") &&
             cuda_ok(cudaGraphInstantiate(&exec[r], graph[r], 0), "cudaGraphInstantiate");

    /* Replays, each with new inputs. */
    long bad = 0;
    for (int k = 0; k < REPLAYS && ok && bad == 0; k++) {
        ok = fill(send, host, k);
        for (int r = 0; r < RANKS && ok; r++)
            ok = cuda_ok(cudaSetDevice(dev[r]), "cudaSetDevice") &&
                 cuda_ok(cudaGraphLaunch(exec[r], st[r]), "cudaGraphLaunch");
        for (int r = 0; r < RANKS && ok; r++)
            ok = cuda_ok(cudaStreamSynchronize(st[r]), "cudaStreamSynchronize (replay)");
        bad = ok ? wrong(recv, host, k) : 0;
    }
    /* Eager calls after the replays. */
    if (ok && bad == 0 && (ok = fill(send, host, REPLAYS))) {
        ok = blink_ok(blinkGroupStart(), "blinkGroupStart");
        for (int r = 0; r < RANKS && ok; r++)
            ok = blink_ok(blinkAllReduce(send[r], recv[r], COUNT, blinkFloat32, blinkSum,
                                         comms[r], st[r]), "blinkAllReduce (eager)");
        ok = ok && blink_ok(blinkGroupEnd(), "blinkGroupEnd");
        for (int r = 0; r < RANKS && ok; r++)
            ok = cuda_ok(cudaStreamSynchronize(st[r]), "cudaStreamSynchronize (eager)");
        bad = ok ? wrong(recv, host, REPLAYS) : 0;
    }
    for (int r = 0; r < RANKS; r++)
        blinkCommDestroy(comms[r]);
    free(host);
    printf("graph-check: %d ranks, %d captured allreduces of %d floats, %d replays and one eager "
           "call: %s (%ld wrong elements)\n", RANKS, CALLS, COUNT, REPLAYS,
           ok && bad == 0 ? "all right" : "FAILED", bad);
    return ok && bad == 0 ? 0 : 1;
}
