/*
 * tune SNAPSHOT...: cuda-caching under a grid of PYTORCH_CUDA_ALLOC_CONF
 * settings, and the one to use.
 */
#ifndef AS_CLI_TUNE_H
#define AS_CLI_TUNE_H

/* The command's arguments after "tune"; returns the exit status. */
int cli_tune(int argc, char **argv);

#endif
