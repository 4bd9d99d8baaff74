fn main() {
    lalrpop::process_src().expect("lalrpop grammar failed to generate");
}
