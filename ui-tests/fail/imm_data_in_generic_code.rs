// Reading imm_data in code generic over the CQ's flags `F`, without the bound that says the
// flags have IMM.
use typed_verbs::{Batch, WcFlags};

fn imm_of<F: WcFlags>(batch: &Batch<'_, F>) -> Option<u32> {
    batch.completion().result().ok().and_then(|wc| wc.imm_data())
}

fn main() {
    let _ = imm_of::<typed_verbs::Standard>;
}
