"""world_engine prep_inputs' three uploads in look-alike form: how many pageable copies and stream syncs per frame."""
import torch
from torch.profiler import profile
print(torch.__version__)
b=torch.zeros(1,1,16,device='cuda',dtype=torch.bfloat16)
def step(btn,m,s):
    b.zero_()
    if btn: b[...,list(btn)]=1.0
    mm=torch.tensor(m,device='cuda',dtype=torch.bfloat16)
    ss=torch.sign(torch.tensor(s,device='cuda',dtype=torch.bfloat16))
    return mm,ss
for _ in range(3): step({3,5},(0.1,0.2),1)
torch.cuda.synchronize()
for name,btn in (("button held",{3,5}),("no button",set())):
    with profile() as p:
        for i in range(4): step(btn,(0.1*i,0.2),1)
        torch.cuda.synchronize()
    print(name,"4 frames:",{v.key:v.count for v in p.key_averages() if 'cpy' in v.key or 'ynch' in v.key or 'Memcpy' in v.key})
