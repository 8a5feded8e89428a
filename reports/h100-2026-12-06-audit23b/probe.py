"""A look-alike of world_engine's frame step (written for the audit, no engine code): a plain object whose methods are
@torch.compile(fullgraph=True, mode="max-autotune", dynamic=False); a KV-cache nn.Module passed as an argument whose buffers
are written in place (index_copy_, index_put_, copy_) and turned into a flex_attention BlockMask inside the graph; a model buffer
copied from an input; .item() checks under `if not torch.compiler.is_compiling()`; a per-frame pageable torch.tensor(...,
device=) upload in the host step. Run as sent (gzip+base64 in one command) with TORCH_LOGS=cudagraphs,recompiles."""
import torch,torch.nn as nn,torch.nn.functional as F
from torch.nn.attention.flex_attention import flex_attention as fa,BlockMask
from torch._dynamo.utils import counters as K
torch._dynamo.config.capture_scalar_outputs=True
d='cuda';bf=torch.bfloat16;D,H,T,L=64,2,128,512;C=L+T;B=torch.nn.Buffer
def o(m):return m.sum(-1,dtype=torch.int32)[None,None].contiguous(),m.argsort(dim=-1,descending=True,stable=True).to(torch.int32)[None,None].contiguous()
def mk(w):
 k=(C+127)//128;b=F.pad(w,(0,k*128-C)).view(k,128);n=b.any(-1)[None].expand(1,k);f=b.all(-1)[None].expand_as(n)
 return BlockMask.from_kv_blocks(*o(n&~f),*o(f),BLOCK_SIZE=128,mask_mod=lambda b,h,q,k:w[k],seq_lengths=(T,C),compute_q_blocks=False)
class Ca(nn.Module):
 def __init__(s):
  super().__init__();s.kv=B(torch.zeros(2,1,H,C,D));w=torch.zeros(C,dtype=torch.bool);w[L:]=True
  s.w=B(w);s.mw=B(torch.empty_like(w));s.off=B(torch.arange(T));s.cur=B(s.off+L);s.fz=True
 def up(s,kv,t):
  if not torch.compiler.is_compiling():torch._check((t>=0).all().item())
  r=s.off+(t%(L//T))*T;s.kv.index_copy_(3,s.cur,kv);s.mw.copy_(s.w);s.mw[r]=s.mw[r]&~(t>=0);bm=mk(s.mw)
  if not s.fz:s.kv.index_copy_(3,r,kv);s.w[r]=True
  k,v=s.kv.unbind(0);return k,v,bm
class M(nn.Module):
 def __init__(s):super().__init__();s.a=nn.Linear(D*H,3*D*H);s.b=nn.Linear(D*H,D*H);s.t=B(torch.empty(T,dtype=torch.long))
 def forward(s,x,g,ts,mo,c):
  s.t.copy_(ts[0,0].expand_as(s.t));q,k,v=s.a(x+g[...,None]+mo.sum()).view(1,T,3,H,D).permute(2,0,3,1,4)
  k,v,bm=c.up(torch.stack([k,v]),s.t[0]);return s.b(fa(q,k,v,block_mask=bm).transpose(1,2).reshape(1,T,H*D))
Z=torch.compile(fullgraph=True,mode="max-autotune",dynamic=False)
class E:
 def __init__(s):
  s.m=M().to(d,bf);s.c=Ca().to(d,bf);s.sg=torch.tensor([1.,.6,.3,0.],device=d,dtype=bf);s.f=torch.zeros(1,1,dtype=torch.long,device=d)
  s.x={"mo":torch.zeros(1,1,2,device=d,dtype=bf),"ts":torch.empty(1,1,dtype=torch.long,device=d)}
 @torch.compile
 def _p(s,m):s.x["mo"][0,0].copy_(m);s.x["ts"].copy_(s.f);s.f.add_(1);return s.x
 @Z
 def den(s,x,cx,c):
  c.fz=True;g=x.new_empty((1,))
  for a,b in zip(s.sg,s.sg.diff()):x=x+b*s.m(x,g.fill_(a),cx["ts"],cx["mo"],c)
  return x
 @Z
 def cp(s,x,cx,c):c.fz=False;s.m(x,x.new_zeros((1,)),cx["ts"],cx["mo"],c)
 @torch.inference_mode()
 def gen(s,i):
  x=torch.randn(1,T,H*D,device=d,dtype=bf);cx=s._p(torch.tensor((.1*i,.2),device=d,dtype=bf));x0=s.den(x,cx,s.c).clone();s.cp(x0,cx,s.c);return x0
e=E();print(torch.__version__)
for i in range(8):e.gen(i)
torch.cuda.synchronize();from torch.profiler import profile
with profile() as p:
 for i in range(3):e.gen(i)
 torch.cuda.synchronize()
print("written",int(e.c.w.sum()),"ts",int(e.f),"3 frames:",{v.key:v.count for v in p.key_averages() if 'Gra' in v.key or 'cpy' in v.key or 'ynch' in v.key})
print(dict(K["inductor"]),dict(K["stats"]),dict(K["graph_break"]))
