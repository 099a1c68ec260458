// A user's TransitionAttr, writing its own attributes and mask into ibv_modify_qp's
// `struct ibv_qp_attr`: the trait is sealed, only the crate's attribute structs implement it.
use typed_verbs::ffi::sys;
use typed_verbs::qp_state::TransitionAttr;

struct AnyMask(i32);

impl TransitionAttr for AnyMask {
    fn apply(&self, attr: &mut sys::ibv_qp_attr) -> i32 {
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_RTS;
        self.0
    }
}

fn main() {
    let mut attr: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
    let _ = AnyMask(!0).apply(&mut attr);
}
