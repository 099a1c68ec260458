/*
 * The C side of the extended post benchmark: one function per op and session size that makes
 * the ibv_wr_* calls the typed post_batch makes, as a C program following ibv_wr_post(3) would:
 * ibv_wr_start, then per request qpx->wr_id, qpx->wr_flags, the op's builder and
 * ibv_wr_set_sge, then ibv_wr_complete. verbs.h's ibv_wr_* are static inline calls through the
 * function pointers of struct ibv_qp_ex. Compiled at -O2 by build.rs.
 */
#include <stdint.h>
#include <infiniband/verbs.h>

/* One session of K requests of one op, wr_id first .. first + K - 1, each signaled. */
#define SESSION(name, K, params, build)                                                  \
	int name params                                                                  \
	{                                                                                \
		uint64_t i;                                                              \
		ibv_wr_start(qpx);                                                       \
		for (i = 0; i < (K); i++) {                                              \
			qpx->wr_id = first + i;                                          \
			qpx->wr_flags = IBV_SEND_SIGNALED;                               \
			build;                                                           \
			ibv_wr_set_sge(qpx, sge->lkey, sge->addr, sge->length);          \
		}                                                                        \
		return ibv_wr_complete(qpx);                                             \
	}

#define SEND_PARAMS (struct ibv_qp_ex *qpx, const struct ibv_sge *sge, uint64_t first)
#define RDMA_PARAMS                                                                       \
	(struct ibv_qp_ex *qpx, const struct ibv_sge *sge, uint64_t first, uint64_t raddr, \
	 uint32_t rkey)

SESSION(c_ex_send_1, 1, SEND_PARAMS, ibv_wr_send(qpx))
SESSION(c_ex_send_16, 16, SEND_PARAMS, ibv_wr_send(qpx))
SESSION(c_ex_send_imm_1, 1, SEND_PARAMS, ibv_wr_send_imm(qpx, htobe32((uint32_t)(first + i))))
SESSION(c_ex_send_imm_16, 16, SEND_PARAMS, ibv_wr_send_imm(qpx, htobe32((uint32_t)(first + i))))
SESSION(c_ex_write_1, 1, RDMA_PARAMS, ibv_wr_rdma_write(qpx, rkey, raddr))
SESSION(c_ex_write_16, 16, RDMA_PARAMS, ibv_wr_rdma_write(qpx, rkey, raddr))
SESSION(c_ex_read_1, 1, RDMA_PARAMS, ibv_wr_rdma_read(qpx, rkey, raddr))
SESSION(c_ex_read_16, 16, RDMA_PARAMS, ibv_wr_rdma_read(qpx, rkey, raddr))
SESSION(c_ex_fetch_add_1, 1, RDMA_PARAMS, ibv_wr_atomic_fetch_add(qpx, rkey, raddr, 1))
SESSION(c_ex_fetch_add_16, 16, RDMA_PARAMS, ibv_wr_atomic_fetch_add(qpx, rkey, raddr, 1))
