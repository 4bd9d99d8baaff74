fn main() {
    let (a, b) = (36.908524970775574, 2.5342023555680773);
    for x in [0.91, 0.914, 0.9145, 0.9147, 0.915, 0.9175468609531606, 0.92] {
        println!(
            "{x} {:.17e} {:?}",
            bat_math::scalar::inc_beta(a, b, x),
            bat_math::scalar::inc_beta_grad(a, b, x)
        );
    }
}
