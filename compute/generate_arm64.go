package compute

// The arm64 assembly and its Go side are generated
// (scripts/kerngen.py): each generator writes one assembly file and
// gen-kern-go-arm64.py writes every kernel's declaration and the tables
// that bind them. TestGeneratedAssembly checks the files against their
// generators.

//go:generate sh -c "cd .. && python3 scripts/gen-kern-f-arm64.py > compute/kern_f_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-q-arm64.py > compute/kern_q_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-ql-arm64.py > compute/kern_ql_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-iq4-arm64.py > compute/kern_iq4_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-mxfp4-arm64.py > compute/kern_mxfp4_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-k-arm64.py > compute/kern_k_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-i8mm-arm64.py > compute/kern_i8mm_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-inplace-arm64.py > compute/kern_inplace_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-attn-arm64.py > compute/attn_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-attn-rows-arm64.py > compute/attn_rows_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-attn-group-arm64.py > compute/attn_group_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-exp-arm64.py > compute/exp_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-quantize-act-arm64.py > compute/quantize_act_arm64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-go-arm64.py > compute/kernels_arm64.go"
