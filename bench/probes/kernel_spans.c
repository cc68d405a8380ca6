/* CUPTI injection library: records every kernel's GPU start and end (and the shared
 * memory it ran with) for the whole process and writes them as CSV at exit, so the
 * time between a benchmark's CUDA events and its kernels can be split into launch gaps
 * and kernel time (bench/NOTES.md 11).
 *
 *   gcc -shared -fPIC -O2 -o kernel_spans.so kernel_spans.c -I<cupti include> \
 *       -L<cupti lib> -lcupti -Wl,-rpath,/usr/local/cuda/lib64
 *   CUDA_INJECTION64_PATH=$PWD/kernel_spans.so KERNEL_SPANS_OUT=spans.csv <program>
 *
 * Columns: device, stream, start_ns, end_ns, dynamic smem bytes, smem executed bytes,
 * grid x, name. Timestamps are CUPTI's (one clock for all devices). Diagnostic only:
 * errors are printed to stderr and the program runs on untraced. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#define BUF_BYTES (8u << 20)

static FILE *out_file;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void report(const char *what, CUptiResult r) {
  const char *s = "?";
  cuptiGetResultString(r, &s);
  fprintf(stderr, "kernel_spans: %s: %s\n", what, s);
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *buf = (uint8_t *)aligned_alloc(8, BUF_BYTES);
  *size = *buf ? BUF_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)ctx; (void)stream; (void)size;
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&out_lock);
  while (out_file && cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    fprintf(out_file, "%u,%u,%llu,%llu,%d,%u,%d,%s\n", k->deviceId, k->streamId, (unsigned long long)k->start,
            (unsigned long long)k->end, k->dynamicSharedMemory, k->sharedMemoryExecuted, k->gridX,
            k->name ? k->name : "?");
  }
  pthread_mutex_unlock(&out_lock);
  free(buf);
}

static void at_exit(void) {
  cuptiActivityFlushAll(1);
  pthread_mutex_lock(&out_lock);
  if (out_file) fclose(out_file);
  out_file = NULL;
  pthread_mutex_unlock(&out_lock);
}

int InitializeInjection(void) {
  const char *path = getenv("KERNEL_SPANS_OUT");
  out_file = fopen(path ? path : "kernel_spans.csv", "w");
  if (!out_file) { perror("kernel_spans: open output"); return 1; }
  fprintf(out_file, "device,stream,start_ns,end_ns,dyn_smem,smem_executed,grid_x,name\n");
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) { report("register callbacks", r); return 1; }
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) { report("enable kernel activity", r); return 1; }
  atexit(at_exit);
  return 1;
}
