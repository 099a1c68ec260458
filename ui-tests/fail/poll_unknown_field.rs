// A completion record with a field that completions do not have.
use typed_verbs::completion_record;

completion_record! {
    struct Recv { wr_id, bytes, qp_num }
    max_batch = 8;
}

fn main() {}
