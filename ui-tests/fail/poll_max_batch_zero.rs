// A batch bound of 0.
use typed_verbs::completion_record;

completion_record! {
    struct Recv { wr_id, byte_len }
    max_batch = 0;
}

fn main() {}
