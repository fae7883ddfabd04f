// A CUDA source like the probes, so that the probes' nvcc flags apply to every source. The
// probes are linked as programs (try_compile's default); they are never run.
int main() { return 0; }
