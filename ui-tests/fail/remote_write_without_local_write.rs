// ibv_reg_mr(3): "If IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is set, then
// IBV_ACCESS_LOCAL_WRITE must be set too." The constants include it; a type that names remote
// write without local write is not a region's rights. Neighbour: typed_access_rights.
use typed_verbs::access::{Access, No, Yes};
use typed_verbs::{Mr, PageBuf};

struct Target<'pd> {
    region: Mr<'pd, PageBuf, Access<No, Yes, No, No>>,
}

fn main() {
    let _ = std::mem::size_of::<Target<'static>>();
}
