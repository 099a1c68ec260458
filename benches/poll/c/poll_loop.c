/*
 * Variant (b) of the poll-loop benchmark: the drain loop hand-written in C against rdma-core's
 * inline polling functions of <infiniband/verbs.h> (ibv_create_cq_ex(3)), as a C program would
 * write it. It folds exactly the fields the Rust variants fold, with the same arithmetic
 * (src/lib.rs: `mix`, `CHECKSUM_SEED`), and takes at most MAX_BATCH completions per batch.
 *
 * Built at -O2 by build.rs (the `cc` crate).
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define MAX_BATCH 16
#define CHECKSUM_SEED 0xcbf29ce484222325ULL
#define CHECKSUM_PRIME 0x100000001b3ULL

static inline uint64_t mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * CHECKSUM_PRIME;
}

/*
 * Drains `cq` completely, in batches of at most MAX_BATCH. Returns 0 and the checksum in
 * `*checksum`, or the error code of a failing ibv_start_poll/ibv_next_poll.
 */
int c_drain(struct ibv_cq_ex *cq, uint64_t *checksum)
{
	uint64_t h = CHECKSUM_SEED;
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };

	for (;;) {
		int ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			break; /* empty: the batch did not start, no end_poll */
		if (ret) {
			*checksum = h;
			return ret;
		}
		unsigned taken = 0;
		for (;;) {
			uint64_t wr_id = cq->wr_id;
			enum ibv_wc_status status = cq->status;
			if (status == IBV_WC_SUCCESS) {
				h = mix(h, wr_id);
				h = mix(h, ibv_wc_read_opcode(cq));
				h = mix(h, ibv_wc_read_byte_len(cq));
				h = mix(h, ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM ?
						   be32toh(ibv_wc_read_imm_data(cq)) :
						   0);
				h = mix(h, ibv_wc_read_qp_num(cq));
				h = mix(h, ibv_wc_read_src_qp(cq));
			} else {
				h = mix(h, wr_id);
				h = mix(h, status);
				h = mix(h, ibv_wc_read_vendor_err(cq));
			}
			if (++taken == MAX_BATCH)
				break;
			ret = ibv_next_poll(cq);
			if (ret == ENOENT)
				break;
			if (ret) {
				ibv_end_poll(cq); /* "end_poll should still be called" */
				*checksum = h;
				return ret;
			}
		}
		ibv_end_poll(cq);
	}
	*checksum = h;
	return 0;
}
