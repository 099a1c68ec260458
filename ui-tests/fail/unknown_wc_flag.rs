// A wc flag that ibv_create_cq_ex does not have.
use typed_verbs::{wc_flags, CqEx};

type Cq<'a> = CqEx<'a, wc_flags!(BYTE_LEN | TIMESTAMP)>;

fn main() {
    let _: Option<Cq<'static>> = None;
}
