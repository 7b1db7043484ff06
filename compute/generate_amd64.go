package compute

// The amd64 assembly and its Go side are generated (scripts/kerngen.py):
// each generator writes one assembly file and gen-kern-go.py writes every
// kernel's declaration and the tables that bind them (gen-kern-go-test.py
// the kernel values only tests use). TestGeneratedAssembly
// checks the files against their generators.

//go:generate sh -c "cd .. && python3 scripts/gen-kern-f.py > compute/kern_f_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-q.py > compute/kern_q_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-ql.py > compute/kern_ql_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-iq4.py > compute/kern_iq4_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-mxfp4.py > compute/kern_mxfp4_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-k.py > compute/kern_k_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-inplace.py > compute/kern_inplace_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-attn.py > compute/attn512_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-lowrank.py > compute/lowrank_amd64.s"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-go.py > compute/kernels_amd64.go"
//go:generate sh -c "cd .. && python3 scripts/gen-kern-go-test.py > compute/kernels_amd64_test.go"
