/*
 * The C side of the receive benchmark: a C program's zero-copy receive, with the work
 * request's wr_id pointing at the program's own buffer descriptor. c_recv_post posts every
 * buffer of the free list; c_recv_drain takes every completion, reads the received bytes in
 * place (byte count, first 8 bytes) and puts the buffer back on the free list. Compiled at -O2
 * by build.rs.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

#define MAX_BATCH 16
#define CHECKSUM_PRIME 0x100000001b3ULL

struct rbuf {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
};

static inline uint64_t mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * CHECKSUM_PRIME;
}

/* Posts the `*nfree` buffers of `free` to `qp`; 0, or the failing post's error. */
int c_recv_post(struct ibv_qp *qp, struct rbuf **free, unsigned *nfree)
{
	while (*nfree) {
		struct rbuf *b = free[--*nfree];
		struct ibv_sge sge = { .addr = b->addr, .length = b->len, .lkey = b->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uintptr_t)b, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;
		int ret = ibv_post_recv(qp, &wr, &bad);
		if (ret) {
			++*nfree;
			return ret;
		}
	}
	return 0;
}

/*
 * Drains `cq`: folds each receive's byte count and first 8 bytes into `*h`, and puts its buffer
 * back on the free list (of `cap` entries). Returns how many, or -1 for a failed completion or
 * poll, or a full free list. It makes the checks the safe Rust handler makes (the free list's
 * capacity; the first 8 bytes read only from a receive of at least 8), so that both sides do the
 * same work.
 */
int c_recv_drain(struct ibv_cq_ex *cq, struct rbuf **free, unsigned *nfree, unsigned cap,
		 uint64_t *h)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int n = 0;
	for (;;) {
		int ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			return n;
		if (ret)
			return -1;
		unsigned taken = 0;
		for (;;) {
			struct rbuf *b = (struct rbuf *)(uintptr_t)cq->wr_id;
			if (cq->status != IBV_WC_SUCCESS) {
				ibv_end_poll(cq);
				return -1;
			}
			uint32_t len = ibv_wc_read_byte_len(cq);
			uint64_t first = 0;
			if (len >= sizeof first)
				memcpy(&first, (const void *)(uintptr_t)b->addr, sizeof first);
			*h = mix(mix(*h, len), first);
			if (*nfree == cap) {
				ibv_end_poll(cq);
				return -1;
			}
			free[(*nfree)++] = b;
			n++;
			if (++taken == MAX_BATCH)
				break;
			ret = ibv_next_poll(cq);
			if (ret == ENOENT)
				break;
			if (ret) {
				ibv_end_poll(cq);
				return -1;
			}
		}
		ibv_end_poll(cq);
	}
}
