/*
 * args_slurm.h - the plugstack.conf arguments as Slurm hands them over
 * (args_slurm.c; the parser is args.h).
 */
#ifndef HCGP_ARGS_SLURM_H
#define HCGP_ARGS_SLURM_H

/* Reads the plugstack.conf arguments into hcgp_state.args. strict: every
 * rejected argument is an error (a person is watching); else it is logged
 * as ignored `where` ("on this node") and its default is used. */
void hcgp_args_load(int ac, char **av, int strict, const char *where);

#endif /* HCGP_ARGS_SLURM_H */
