#!/usr/bin/env python3
"""Transcribes one region_init_internal_* function of aws-ofi-nccl's src/tuner/nccl_ofi_regions.cpp
into the C++ tables of sim/collectives/net_plugin_regions.cpp (how the P6 tables were written,
2026-12-06, from aws/aws-ofi-nccl 2daf7d30). Prints the functions on stdout and, on stderr, each
region's (algorithm, protocol, num_vertices, vertices found): the two counts must agree.

  git -C MIRROR show HEAD:src/tuner/nccl_ofi_regions.cpp > regions.cpp
  scripts/aws_ofi_regions.py regions.cpp region_init_internal_p6 region_init_internal_p6_b300 p6

Arguments: the source file, the function to read, the function that follows it in the file (the
scan stops there), the prefix of the
C++ function names. Not run by the tests (it needs the plugin's source); the tables it wrote are
checked there (NcclNetPlugin.RegionTablesAreTheSourcesCounts).
"""
import re
import sys

path, func, next_func, prefix = sys.argv[1:5]
src = open(path).read()
start = src.index('static ncclResult_t ' + func + '(')
end = src.index('static ncclResult_t ' + next_func + '(')
body=src[start:end]
# split into branches by nRanks condition
branches=[]
for m in re.finditer(r'(if \(nRanks == 8 \* nNodes\)|else if \(nRanks == nNodes\))',body):
    branches.append((m.start(),m.group(1)))
def tok(s):
    s=s.strip()
    s=s.replace('TUNER_MAX_SIZE','kTunerMaxSize').replace('TUNER_MAX_RANKS','kTunerMaxRanks')
    return s
algos={'NCCL_ALGO_TREE':'Algo::TREE','NCCL_ALGO_RING':'Algo::RING','NCCL_ALGO_NVLS_TREE':'Algo::NVLS_TREE','NCCL_ALGO_NVLS':'Algo::NVLS','NCCL_ALGO_PAT':'std::nullopt'}
protos={'NCCL_PROTO_LL':'Proto::LL','NCCL_PROTO_LL128':'Proto::LL128','NCCL_PROTO_SIMPLE':'Proto::SIMPLE'}
out=[]
names={'ncclFuncAllReduce':'allreduce','ncclFuncAllGather':'allgather','ncclFuncReduceScatter':'reducescatter'}
for bi,(pos,cond) in enumerate(branches):
    seg=body[pos:(branches[bi+1][0] if bi+1<len(branches) else len(body))]
    rpn='8pn' if '8 *' in cond else '1pn'
    # each collType block
    for cm in re.finditer(r'collType = (ncclFunc\w+);(.*?)set_regions\(',seg,re.S):
        fname,blk=cm.group(1),cm.group(2)
        fn=f'{prefix}_{rpn}_{names[fname]}'
        lines=[f'// nRanks == {"8 * nNodes" if rpn=="8pn" else "nNodes"}, {fname}', f'std::vector<AwsOfiRegion> {fn}() {{']
        for em in re.finditer(r'nccl_ofi_tuner_point_t (\w+)\s*=\s*extend_region\(\(nccl_ofi_tuner_point_t\)\{([^}]*)\},\s*\(nccl_ofi_tuner_point_t\)\{([^}]*)\},\s*\(nccl_ofi_tuner_point_t\)\{TUNER_MAX_SIZE, TUNER_MAX_RANKS\}\)',blk,re.S):
            lines.append(f'  const TunerPoint {em.group(1)} = aws_ofi_extend_region({{{tok(em.group(2))}}}, {{{tok(em.group(3))}}}, kZ);')
        regs=[]
        for rm in re.finditer(r'\.algorithm = (\w+),\s*\.protocol = (\w+),\s*\.num_vertices = (\d+),\s*\.vertices = \{',blk,re.S):
            i=rm.end(); depth=1; j=i
            while depth:
                if blk[j]=='{': depth+=1
                elif blk[j]=='}': depth-=1
                j+=1
            verts_raw=blk[i:j-1]
            vs=[]
            for vm in re.finditer(r'\{([^{}]*)\}|([A-Za-z_]\w*)',verts_raw):
                if vm.group(1) is not None: vs.append('{'+tok(vm.group(1))+'}')
                else: vs.append(tok(vm.group(2)))
            regs.append((algos[rm.group(1)],protos[rm.group(2)],int(rm.group(3)),vs))
        lines.append('  return {'+',\n          '.join(f'{{.algo = {a},\n           .proto = {p},\n           .num_vertices = {n},\n           .vertices = {{{", ".join(v)}}}}}' for a,p,n,v in regs)+'};')
        lines.append('}')
        out.append('\n'.join(lines))
        print(fn, [(a,p,n,len(v)) for a,p,n,v in regs], file=sys.stderr)
print('\n\n'.join(out))
