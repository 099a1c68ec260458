/*
 * The C side of the post_send benchmark: one function per opcode that builds the same
 * struct ibv_send_wr the typed API builds and posts it with verbs.h's inline ibv_post_send,
 * as a C program would. Compiled at -O2 by build.rs.
 */
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

static inline int post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	return ibv_post_send(qp, wr, &bad);
}

int c_post_send(struct ibv_qp *qp, struct ibv_sge *sge, uint64_t wr_id)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	return post(qp, &wr);
}

int c_post_send_imm(struct ibv_qp *qp, struct ibv_sge *sge, uint64_t wr_id, uint32_t imm)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(imm) };
	return post(qp, &wr);
}

int c_post_write(struct ibv_qp *qp, struct ibv_sge *sge, uint64_t wr_id, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post(qp, &wr);
}

int c_post_read(struct ibv_qp *qp, struct ibv_sge *sge, uint64_t wr_id, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post(qp, &wr);
}

int c_post_fetch_add(struct ibv_qp *qp, struct ibv_sge *sge, uint64_t wr_id, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.rkey = rkey;
	return post(qp, &wr);
}
